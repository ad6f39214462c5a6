"""Why a pod the operator made is not running, in Kubernetes' own words (any engine's pods)."""
from __future__ import annotations

import re
from typing import Any

STARTING = (None, "ContainerCreating", "PodInitializing")  # waiting reasons of a pod on its way: nothing wrong
# the containers' policy: a container that fails without a termination message gets its log's tail as one, so the
# reason a pod crash-loops reaches the StreamApp's status without `kubectl logs`
TERMINATION_MESSAGE_POLICY = "FallbackToLogsOnError"
LAST_WORDS_CHARS = 300
ROUTINE = re.compile(r"\b(INFO|DEBUG|WARN|WARNING)\b")


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
            said = ": ".join(x for x in (waiting.get("reason"), waiting.get("message")) if x)
            last = last_words(container)
            return container.get("name"), f"{said}; {last}" if last else said
    return None


def last_words(container: dict[str, Any]) -> str | None:
    """How the container's last run ended: its exit code and the last line of its termination message (with
    TERMINATION_MESSAGE_POLICY, the tail of its log) that is not a routine log record (INFO, DEBUG, WARN: what
    follows the error as Spark shuts down); cut to LAST_WORDS_CHARS."""
    ended = (container.get("lastState") or {}).get("terminated") or {}
    if not ended:
        return None
    lines = [line.strip() for line in (ended.get("message") or "").splitlines() if line.strip()]
    words = f"last run exited {ended.get('exitCode')}"
    if lines:
        telling = [line for line in lines if not ROUTINE.search(line)]
        words += f": {(telling or lines)[-1]}"
    return words if len(words) <= LAST_WORDS_CHARS else words[:LAST_WORDS_CHARS - 1] + "…"
