"""What to do with a managed app's driver pod, given the one running and the one wanted. Pure.

The driver is replaced when it is gone, has ended (Failed: evicted, node lost; Succeeded: the runner exited), or
was started from a different spec (the digest annotations of elastream.engines.spark.managed); it is stopped while the
StreamApp is suspended. A replacement resumes from the checkpoint on the shared volume.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from elastream.engines.spark.managed import SPEC_FIELDS, SPEC_HASH

Kind = Literal["keep", "create", "wait", "restart", "replace", "stop"]


@dataclass(frozen=True)
class DriverAction:
    kind: Kind  # restart: graceful delete for a new spec; replace: delete an ended pod; stop: suspended
    message: str

    @property
    def deletes(self) -> bool:
        return self.kind in ("restart", "replace", "stop")


def plan(current: dict[str, Any] | None, wanted: dict[str, Any], suspended: bool,
         renewed: dict[str, str] | None = None) -> DriverAction:
    """The next step for the driver pod (a deleted one is created again at the next step). `renewed`: objects the
    driver holds credentials from (its token Secret, its ServiceAccount) just created again, with their creation
    times; a driver started before them must restart to use the new ones."""
    if current is not None and current["metadata"].get("deletionTimestamp"):
        return DriverAction("wait", "the previous driver pod is terminating")
    if suspended:
        if current is None:
            return DriverAction("keep", "suspended: no driver pod runs; the checkpoint is kept")
        return DriverAction("stop", "spec.suspend is true: stopping the driver (the checkpoint is kept)")
    if current is None:
        return DriverAction("create", "created the driver pod")
    ended = _ended(current)
    if ended:
        return DriverAction("replace", f"the driver pod {ended}: replacing it (it resumes from the checkpoint)")
    stale = sorted(what for what, at in (renewed or {}).items() if _created(current) < at)
    if stale:
        return DriverAction("restart", f"{', '.join(stale)} created again: restarting the driver to use it")
    changed = changed_fields(current, wanted)
    if changed:
        return DriverAction("restart", f"{changed} changed: restarting the driver (it resumes from the checkpoint)")
    return DriverAction("keep", "the driver pod runs the current spec")


def _created(pod: dict[str, Any]) -> str:
    return pod["metadata"].get("creationTimestamp") or ""


def _ended(pod: dict[str, Any]) -> str | None:
    """How the pod ended (evicted, node lost, exited), or None while it may still run."""
    status = pod.get("status") or {}
    phase = status.get("phase")
    if phase not in ("Failed", "Succeeded"):
        return None
    why = ": ".join(x for x in (status.get("reason"), status.get("message")) if x)
    return f"{phase.lower()}" + (f" ({why})" if why else "")


def changed_fields(current: dict[str, Any], wanted: dict[str, Any]) -> str | None:
    """What differs between the spec the pod was started from and the wanted one, in words; None if nothing."""
    have, want = _annotations(current), _annotations(wanted)
    if have.get(SPEC_HASH) == want.get(SPEC_HASH):
        return None
    old, new = _fields(have), _fields(want)
    fields = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
    return ", ".join(fields) if fields else "the driver's pod template (a new operator version)"


def _annotations(pod: dict[str, Any]) -> dict[str, str]:
    return pod["metadata"].get("annotations") or {}


def _fields(annotations: dict[str, str]) -> dict[str, str]:
    try:
        return json.loads(annotations.get(SPEC_FIELDS) or "{}")
    except ValueError:
        return {}
