"""Kubernetes-style status conditions: set one, keep lastTransitionTime unless its status changes."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any


def now_rfc3339() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def set_condition(conditions: list[dict[str, Any]], type_: str, status: bool | str, reason: str, message: str,
                  generation: int | None = None, now: str | None = None) -> list[dict[str, Any]]:
    """A new list with condition `type_` set; the others are kept in their order."""
    status = status if isinstance(status, str) else ("True" if status else "False")
    old = next((c for c in conditions if c.get("type") == type_), None)
    changed = old is None or old.get("status") != status
    new = {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": (now or now_rfc3339()) if changed else old["lastTransitionTime"],
    }
    if generation is not None:
        new["observedGeneration"] = generation
    if old is None:
        return [*conditions, new]
    return [new if c is old else c for c in conditions]


def get_condition(conditions: list[dict[str, Any]], type_: str) -> dict[str, Any] | None:
    return next((c for c in conditions or [] if c.get("type") == type_), None)
