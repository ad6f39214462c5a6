"""Why a pod the operator made is not running, in Kubernetes' own words (any engine's pods)."""
from __future__ import annotations

from typing import Any

STARTING = (None, "ContainerCreating", "PodInitializing")  # waiting reasons of a pod on its way: nothing wrong


def why_not_running(pod: dict[str, Any], init_containers: bool = False) -> tuple[str | None, str] | None:
    """(None, the scheduler's message) when the pod cannot be placed (e.g. its claim is unbound); (container, "reason:
    message") when a container is stuck waiting (image not pulled, crash loop); None when neither."""
    status = pod.get("status") or {}
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False" and cond.get("message"):
            return None, cond["message"]
    containers = (status.get("initContainerStatuses") or [] if init_containers else []) + \
        (status.get("containerStatuses") or [])
    for container in containers:
        waiting = (container.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") not in STARTING:
            return container.get("name"), ": ".join(x for x in (waiting.get("reason"), waiting.get("message")) if x)
    return None
