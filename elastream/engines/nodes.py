"""CPU in Kubernetes' words, for anyone who places pods: quantities, a pod's requests, the nodes that take pods."""
from __future__ import annotations

from typing import Any


def cpu_cores(quantity: str | int | float) -> float:
    """A Kubernetes CPU quantity ("2", "500m", "0.5") in cores."""
    text = str(quantity)
    return float(text[:-1]) / 1000.0 if text.endswith("m") else float(text)


def requested_cpu(pod: dict[str, Any]) -> float:
    """Cores a pod's containers request."""
    spec = pod.get("spec") or {}
    return sum(cpu_cores(((c.get("resources") or {}).get("requests") or {}).get("cpu", "0"))
               for c in spec.get("containers") or [])


def usable_node(node: dict[str, Any]) -> bool:
    """Ready, schedulable, and without NoSchedule/NoExecute taints."""
    spec, status = node.get("spec") or {}, node.get("status") or {}
    if spec.get("unschedulable"):
        return False
    if any(t.get("effect") in ("NoSchedule", "NoExecute") for t in spec.get("taints") or []):
        return False
    ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    return bool(ready) and ready[0].get("status") == "True"


def pod_ref(pod: dict[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


def cpu_left(node: dict[str, Any], pods: list[dict[str, Any]], excluded: set[str]) -> float:
    """The node's allocatable CPU less what its Pending or Running pods request, except the pods in `excluded`
    ("namespace/name": the ones being placed, which bring their measured load instead)."""
    allocatable = cpu_cores(((node.get("status") or {}).get("allocatable") or {}).get("cpu", "0"))
    others = sum(requested_cpu(p) for p in pods if pod_ref(p) not in excluded
                 and (p.get("status") or {}).get("phase") in ("Pending", "Running"))
    return max(0.0, allocatable - others)
