"""One evaluation of a StreamApp's policy: resolve the policy, let the app's engine wire the core to the job
(metrics from Prometheus, its realizer), add the Kubernetes-side ports (a ConfigMap, events), decide, realize,
write status.

`spec.replicas` is the desired executor count, as for an HPA target: the Spark engine writes it through the
scale subresource before it rescales, and a value written by someone else (`kubectl scale`) is a manual
override that is realized at the next evaluation (an engine without such a knob ignores it).
"""
from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError

from controllers import kube
from controllers.events import KopfEventSink
from controllers.metrics import DECISIONS, DESIRED_EXECUTORS
from controllers.placement_step import place
from controllers.state_store import ConfigMapStateStore
from controllers.schedule import Lateness
from controllers.status import (evaluated_status, evaluation_write, invalid_status, not_supported_status,
                                schedule_status, unavailable_status)
from elastream.api.manifests import describe_errors
from elastream.api.policy import ElasticityPolicySpec
from elastream.api.streamapp import StreamAppSpec
from elastream.engines import engine_for
from elastream.engines.base import EngineNotSupported, MetricsUnavailable, decision_realized
from elastream.errors import UserError
from elastream.policy_config import to_policy_config
from elasticity.adapters import SystemClock
from elasticity.autoscaler import JobAutoscaler
from elasticity.model import Decision, JobObservation
from elasticity.ports import MetricsSource

log = logging.getLogger(__name__)
RETRY_INVALID_S = 30.0


class PolicyNotFound(UserError):
    """spec.policyRef names an ElasticityPolicy that does not exist (yet): the app holds until it does."""


class ReportingMetricsSource:
    """Keeps the last observation, or the MetricsUnavailable message, for the status (the core holds on it)."""

    def __init__(self, source: MetricsSource):
        self.source = source
        self.problem: str | None = None
        self.observation: JobObservation | None = None

    def observe(self, job: str) -> JobObservation | None:
        try:
            self.observation, self.problem = self.source.observe(job), None
        except MetricsUnavailable as err:
            self.observation, self.problem = None, str(err)
            raise
        return self.observation


def write_evaluation(namespace: str, name: str, change, generation: int,
                     body: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Every status an evaluation writes goes through here: evaluation_write drops it when the app was suspended
    while the evaluation ran, and keeps observedGeneration from going back."""
    return kube.update_status(namespace, name, evaluation_write(change, generation), body=body)


def resolve_policy(namespace: str, spec: StreamAppSpec) -> ElasticityPolicySpec:
    if spec.policy is not None:
        return spec.policy
    if spec.policy_ref is None:
        return ElasticityPolicySpec()
    body = kube.get_custom(namespace, "elasticitypolicies", spec.policy_ref.name)
    if body is None:
        raise PolicyNotFound(f"spec.policyRef.name: ElasticityPolicy {spec.policy_ref.name!r} not found in "
                             f"{namespace}; nothing is scaled until it exists")
    try:
        return ElasticityPolicySpec.model_validate(body.get("spec") or {})
    except ValidationError as err:
        problems = "; ".join(describe_errors(err))
        raise UserError(f"spec.policyRef.name: ElasticityPolicy {spec.policy_ref.name!r} is invalid: {problems}") from None


def evaluate(body: dict[str, Any], lateness: Lateness | None = None) -> float:
    """Evaluate once; returns the seconds until the next evaluation. Never raises on bad input.

    `body` is fresh (just read): its status is the base of the status written. `lateness`: how late this
    evaluation started, for the OnSchedule condition."""
    meta = body["metadata"]
    namespace, name, generation = meta["namespace"], meta["name"], meta.get("generation", 0)
    old = dict(body.get("status") or {})

    def report(change, retry_s: float = RETRY_INVALID_S) -> float:
        """Write a status that says why nothing was evaluated; retry later."""
        write_evaluation(namespace, name, lambda st: schedule_status(change(st), lateness, generation), generation,
                         body)
        return retry_s

    try:
        spec = StreamAppSpec.model_validate(body["spec"])
        policy = resolve_policy(namespace, spec)
        config = to_policy_config(policy, spec)
    except ValidationError as err:
        return report(lambda st: invalid_status(st, "; ".join(describe_errors(err)), generation))
    except UserError as err:
        reason = "PolicyNotFound" if isinstance(err, PolicyNotFound) else "InvalidSpec"
        return report(lambda st: invalid_status(st, str(err), generation, reason))
    if spec.suspend:
        return config.evaluation_interval_s  # the reconcile pass reports this state
    try:
        job = engine_for(spec).operator_job(namespace, name, spec, policy)
    except EngineNotSupported as err:
        return report(lambda st: not_supported_status(st, str(err), generation))
    except kube.SecretProblem as err:  # looked for again soon: creating the Secret is all it takes
        return report(lambda st: unavailable_status(st, err.reason, str(err), generation),
                      min(RETRY_INVALID_S, config.evaluation_interval_s))
    metrics = ReportingMetricsSource(job.metrics)
    autoscaler = JobAutoscaler(name, config, metrics=metrics, realizer=job.realizer(),
                               store=ConfigMapStateStore(body), events=KopfEventSink(body), clock=SystemClock())
    decision = _manual_override(autoscaler, job, spec, old) or autoscaler.scale()
    DECISIONS.labels(action=decision.action, guard=decision.guard or "").inc()
    realized = decision_realized(decision)
    placement = place(namespace, name, spec, policy, autoscaler, rescaled=realized)
    current = job.current()

    def change(fresh: dict[str, Any]) -> dict[str, Any]:
        evaluated = {**fresh, **evaluated_status(fresh, decision, metrics.observation, realized, metrics.problem,
                                                 generation, current)}
        if placement is not None:
            evaluated["placement"] = placement
        else:
            evaluated.pop("placement", None)
        return schedule_status(evaluated, lateness, generation)

    written = write_evaluation(namespace, name, change, generation, body)
    desired = ((written or {}).get("status") or {}).get("desiredExecutors")
    if desired is not None:  # the dashboard's "desired" line: the same number as status.desiredExecutors
        DESIRED_EXECUTORS.labels(namespace=namespace, streamapp=name).set(desired)
    return config.evaluation_interval_s


def _manual_override(autoscaler: JobAutoscaler, job, spec: StreamAppSpec, old: dict[str, Any]) -> Decision | None:
    """Realize spec.replicas when someone other than the autoscaler changed it (the engine says what that means)."""
    override = job.manual_override(spec.replicas, old.get("desiredExecutors"))
    if override is None:
        return None
    targets, current, reason = override
    return autoscaler.override(targets, reason, current=current)
