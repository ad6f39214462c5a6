"""The StreamApp status written after each evaluation: conditions, executors, the decision and its reason.

Pure functions from (old status, decision, observation) to the new status, so they are unit-tested without
a cluster and the handlers only write what these return.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable

from controllers.conditions import get_condition, set_condition
from controllers.schedule import Lateness
from elastream.api.status import HISTORY_LIMIT
from elasticity.autoscaler import GUARD_REASONS
from elasticity.guards import METRICS_GUARDS
from elasticity.model import Decision, JobObservation


def _rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def decision_record(d: Decision, realized: bool) -> dict[str, Any]:
    """The status form of a core Decision: from/to count all stages; with several (Storm) current/targets say
    which moved."""
    before = sum(d.current.values()) if d.current else None
    after = sum(d.targets.values()) if d.targets else None
    if d.action == "scale" and before is not None and after is not None and after != before:
        action = "scaleUp" if after > before else "scaleDown"
    else:
        action = "hold" if d.action == "hold" else "none"
    record = {"time": _rfc3339(d.timestamp), "action": action, "reason": d.reason, "algorithm": d.policy,
              "realized": realized,
              "inputs": {k: float(v) for k, v in d.inputs.items() if isinstance(v, (int, float)) and v == v}}
    if before is not None:
        record["from"] = before
    if after is not None:
        record["to"] = after
    if len(d.targets) > 1:  # several stages (Storm components): say which moved
        record["targets"] = {k: int(v) for k, v in d.targets.items()}
        record["current"] = {k: int(v) for k, v in d.current.items()}
    return record


def evaluated_status(old: dict[str, Any], d: Decision, obs: JobObservation | None, realized: bool,
                     metrics_message: str | None, generation: int,
                     current: dict[str, int] | None = None) -> dict[str, Any]:
    """Status after one evaluation of the policy. `current`: parallelism per stage as the job reports it (fresher
    than the metrics)."""
    record = decision_record(d, realized)
    conds = old.get("conditions") or []
    metrics_ok = obs is not None and d.guard not in METRICS_GUARDS
    unavailable = "AwaitingMetrics" if d.guard == "settling" else "MetricsUnavailable"
    conds = set_condition(conds, "MetricsAvailable", metrics_ok, "MetricsRead" if metrics_ok else unavailable,
                          "metrics read" if metrics_ok else (metrics_message or d.reason), generation)
    scaling = record["action"] in ("scaleUp", "scaleDown")
    conds = set_condition(conds, "Scaling", scaling and realized,
                          ("Rescaled" if realized else "Advised") if scaling else _hold_reason(d),
                          d.reason, generation)
    bottleneck = record["action"] == "scaleUp" or d.guard in ("ineffective_scale_up", "backlog", "bounds")
    if d.guard in METRICS_GUARDS:  # nothing to judge the capacity by: not "capacity meets the load"
        conds = set_condition(conds, "BottleneckDetected", "Unknown", unavailable, "no metrics to judge by",
                              generation)
    else:
        conds = set_condition(conds, "BottleneckDetected", bottleneck, "Bottleneck" if bottleneck else "NoBottleneck",
                              d.reason if bottleneck else "capacity meets the load", generation)
    degraded = d.guard in ("metrics", "realize_failed")
    conds = set_condition(conds, "Degraded", degraded, _hold_reason(d) if degraded else "Healthy",
                          d.reason if degraded else "", generation)
    running_message = ("the job restarts after a rescale" if d.guard == "settling"
                       else "the job runs and its metrics are read")
    conds = set_condition(conds, "Ready", not degraded, "Running" if not degraded else _hold_reason(d),
                          running_message if not degraded else d.reason, generation)
    status: dict[str, Any] = {
        "conditions": conds,
        "lastDecision": record,
        "history": ((old.get("history") or []) + [record])[-HISTORY_LIMIT:],
        "observedGeneration": generation,
        "phase": "Scaling" if scaling and realized else ("Degraded" if degraded else "Running"),
    }
    running = current or (obs.parallelism if obs is not None and obs.stages else None)
    if running:
        status["currentExecutors"] = sum(running.values())
        status["parallelism"] = dict(running)
    if obs is not None and obs.stages:
        if obs.latency_p99_s is not None:
            status["latencyP99Seconds"] = round(float(obs.latency_p99_s), 3)
    # only a scale decision moves the desired count: a hold or a steady verdict reads the executors registered
    # so far, and while a new executor pod is still starting that is fewer than were asked for
    if d.targets and d.action == "scale":
        status["desiredExecutors"] = sum(d.targets.values())
        status["desiredParallelism"] = dict(d.targets)
    return status


def unavailable_status(old: dict[str, Any], reason: str, message: str, generation: int) -> dict[str, Any]:
    """The job cannot be reached or controlled (JobUnreachable, SecretNotFound, SecretKeyNotFound): not Ready."""
    conds = set_condition(old.get("conditions") or [], "Ready", False, reason, message, generation)
    conds = set_condition(conds, "Degraded", True, reason, message, generation)
    return {**old, "conditions": conds, "phase": "Degraded"}


def progressing_status(old: dict[str, Any], reason: str, message: str, generation: int) -> dict[str, Any]:
    """Progressing=True with the reason; a job coming back (first start, resume, fixed spec) is Pending."""
    conds = set_condition(old.get("conditions") or [], "Progressing", True, reason, message, generation)
    ready = next((c for c in conds if c["type"] == "Ready"), None)
    if ready is not None and ready["reason"] in ("Suspended", "InvalidSpec"):
        conds = set_condition(conds, "Ready", False, "Starting", "the job is starting", generation)
    phase = old.get("phase")
    return {**old, "conditions": conds, "phase": "Pending" if phase in (None, "Suspended", "Failed") else phase}


def failed_status(old: dict[str, Any], message: str, generation: int) -> dict[str, Any]:
    """The owned objects could not be made (the API server's words: an RBAC refusal, a quota): retried."""
    conds = set_condition(old.get("conditions") or [], "Progressing", False, "ReconcileFailed", message, generation)
    return {**old, "conditions": conds}


def not_supported_status(old: dict[str, Any], message: str, generation: int) -> dict[str, Any]:
    conds = set_condition(old.get("conditions") or [], "Ready", False, "EngineNotSupported", message, generation)
    return {**old, "conditions": conds, "phase": "Pending"}


def suspended_status(old: dict[str, Any], message: str, generation: int) -> dict[str, Any]:
    conds = set_condition(old.get("conditions") or [], "Progressing", False, "Suspended", message, generation)
    conds = set_condition(conds, "Ready", False, "Suspended", message, generation)
    return {**old, "conditions": conds, "phase": "Suspended"}


def invalid_status(old: dict[str, Any], message: str, generation: int, reason: str = "InvalidSpec") -> dict[str, Any]:
    """Status of a StreamApp whose spec (or policy) cannot be used: nothing is changed, the message says why."""
    conds = old.get("conditions") or []
    conds = set_condition(conds, "Ready", False, reason, message, generation)
    conds = set_condition(conds, "Degraded", True, reason, message, generation)
    return {**old, "conditions": conds, "phase": "Failed", "observedGeneration": generation}


def _hold_reason(d: Decision) -> str:
    return GUARD_REASONS.get(d.guard or "", "Steady")


def schedule_status(old: dict[str, Any], lateness: Lateness | None, generation: int) -> dict[str, Any]:
    """OnSchedule: False while evaluations start more than one evaluationInterval late (the operator cannot keep up);
    nothing is said of an app's first evaluation, which had no due time."""
    if lateness is None:
        return old
    late, interval = round(lateness.late_by_s, 1), f"{lateness.interval_s:g}s"
    if lateness.late:
        message = (f"this evaluation started {late:g}s after it was due (evaluationInterval {interval}): the operator "
                   "cannot keep up; give it more workers (settings.workers) or shard the StreamApps among operators")
        conds = set_condition(old.get("conditions") or [], "OnSchedule", False, "EvaluationLate", message, generation)
    else:
        conds = set_condition(old.get("conditions") or [], "OnSchedule", True, "OnTime",
                              f"evaluated every evaluationInterval ({interval})", generation)
    return {**old, "conditions": conds}


def unless_stale(change: Callable[[dict[str, Any]], dict[str, Any]], generation: int
                 ) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A reconcile pass's `change`, unless the status already answers a newer generation of the spec: the pass
    worked on a snapshot older than what the pass for the newer spec has written, and must not overwrite it."""

    def guarded(fresh: dict[str, Any]) -> dict[str, Any]:
        return fresh if int(fresh.get("observedGeneration") or 0) > generation else change(fresh)
    return guarded


def evaluation_write(change: Callable[[dict[str, Any]], dict[str, Any]], generation: int
                     ) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """An evaluation's `change`, minding that the spec may have moved on while it ran. A suspend: the reconcile has
    stopped the job and written phase Suspended, and this verdict about the running job is dropped (it would turn
    the phase back to Running). Anything else — often the operator's own spec.replicas write, made by this very
    evaluation before it rescales — does not void the verdict, but observedGeneration is not taken back."""

    def guarded(fresh: dict[str, Any]) -> dict[str, Any]:
        seen = int(fresh.get("observedGeneration") or 0)
        if seen > generation and fresh.get("phase") == "Suspended":
            return fresh
        new = change(fresh)
        if seen > generation:
            new["observedGeneration"] = seen
        return new
    return guarded
