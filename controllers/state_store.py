"""StateStore port in a ConfigMap owned by the StreamApp: the autoscaler's memory survives operator restarts."""
from __future__ import annotations

import json
from typing import Any

from kubernetes.client.rest import ApiException

from controllers import kube
from elastream.engines.owners import LABEL_APP, owner_reference


def state_name(app: str) -> str:
    return f"{app}-elastream-state"


class ConfigMapStateStore:
    def __init__(self, body: dict[str, Any]):
        self.namespace = body["metadata"]["namespace"]
        self.app = body["metadata"]["name"]
        self.owner = owner_reference(body)

    def load(self, job: str) -> dict[str, Any] | None:
        try:
            cm = kube.core().read_namespaced_config_map(state_name(self.app), self.namespace)
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        raw = (cm.data or {}).get("state.json")
        return json.loads(raw) if raw else None

    def save(self, job: str, state: dict[str, Any]) -> None:
        body = {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": state_name(self.app), "labels": {LABEL_APP: self.app}, "ownerReferences": [self.owner]},
            "data": {"state.json": json.dumps(state, separators=(",", ":"))},
        }
        try:
            kube.core().replace_namespaced_config_map(state_name(self.app), self.namespace, body)
        except ApiException as err:
            if err.status != 404:
                raise
            kube.core().create_namespaced_config_map(self.namespace, body)
