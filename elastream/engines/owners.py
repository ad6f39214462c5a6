"""What every object the operator makes for a StreamApp carries, whatever the engine: the app's labels and an owner
reference to the StreamApp (so deleting the StreamApp removes them all)."""
from __future__ import annotations

from typing import Any

LABEL_APP = "elastream.io/app"
LABEL_ROLE = "elastream.io/role"


def selector(app: str) -> str:
    """Label selector of the app's pods, for the scale subresource."""
    return f"{LABEL_APP}={app}"


def owner_reference(body: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": body["apiVersion"],
        "kind": body["kind"],
        "name": body["metadata"]["name"],
        "uid": body["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def object_meta(name: str, app: str, owner: dict[str, Any], role: str) -> dict[str, Any]:
    return {"name": name, "labels": {LABEL_APP: app, LABEL_ROLE: role, "app.kubernetes.io/managed-by": "elastream"},
            "ownerReferences": [owner]}
