"""One evaluation of a Spark StreamApp's policy: resolve the policy, wire the core to its Kubernetes-side
ports (Prometheus, the control endpoint, a ConfigMap, events), decide, realize, write status.

`spec.replicas` is the desired executor count, as for an HPA target: the autoscaler writes it through the
scale subresource before it rescales, and a value written by someone else (`kubectl scale`) is a manual
override that is realized at the next evaluation.
"""
from __future__ import annotations

import logging
import time
from typing import Any

from pydantic import ValidationError

from controllers import kube, managed
from controllers.events import KopfEventSink
from controllers.metrics import DECISIONS, ERRORS, REALIZE_SECONDS
from controllers.state_store import ConfigMapStateStore
from controllers.status import evaluated_status, invalid_status
from elastream.adapters.control import ControlEndpointClient, ControlError
from elastream.adapters.observation import SPARK_STAGE, MetricsUnavailable
from elastream.adapters.prometheus import PrometheusMetricsSource
from elastream.api.manifests import describe_errors
from elastream.api.policy import ElasticityPolicySpec
from elastream.api.streamapp import StreamAppSpec
from elastream.errors import UserError
from elastream.policy_config import to_policy_config
from elasticity.adapters import SystemClock
from elasticity.autoscaler import JobAutoscaler
from elasticity.model import Decision, JobObservation
from elasticity.ports import Event

log = logging.getLogger(__name__)
RETRY_INVALID_S = 30.0


class ReportingMetricsSource:
    """Turns MetricsUnavailable into "no observation" (the core then holds) and keeps the message for the status."""

    def __init__(self, source: PrometheusMetricsSource):
        self.source = source
        self.problem: str | None = None
        self.observation: JobObservation | None = None

    def observe(self, job: str) -> JobObservation | None:
        try:
            self.observation = self.source.observe(job)
            self.problem = None
        except MetricsUnavailable as err:
            self.observation, self.problem = None, str(err)
        return self.observation


class ReplicasRealizer:
    """Write spec.replicas (so a restart finds the intent), then rescale through the control endpoint."""

    def __init__(self, namespace: str, name: str, client: ControlEndpointClient):
        self.namespace, self.name, self.client = namespace, name, client

    def realize(self, job: str, decision: Decision) -> None:
        target = decision.targets[SPARK_STAGE]
        kube.patch_replicas(self.namespace, self.name, target)
        started = time.monotonic()
        self.client.set_executors(target)
        REALIZE_SECONDS.observe(time.monotonic() - started)


def resolve_policy(namespace: str, spec: StreamAppSpec) -> ElasticityPolicySpec:
    if spec.policy is not None:
        return spec.policy
    if spec.policy_ref is None:
        return ElasticityPolicySpec()
    body = kube.get_custom(namespace, "elasticitypolicies", spec.policy_ref.name)
    if body is None:
        raise UserError(f"spec.policyRef.name: ElasticityPolicy {spec.policy_ref.name!r} not found in {namespace}")
    try:
        return ElasticityPolicySpec.model_validate(body.get("spec") or {})
    except ValidationError as err:
        problems = "; ".join(describe_errors(err))
        raise UserError(f"spec.policyRef.name: ElasticityPolicy {spec.policy_ref.name!r} is invalid: {problems}") from None


def control_client(namespace: str, name: str, spec: StreamAppSpec) -> ControlEndpointClient:
    attach = spec.spark.attach
    if attach is not None:
        token = kube.read_secret_key(namespace, attach.token_secret_ref.name, attach.token_secret_ref.key)
        return ControlEndpointClient(attach.control_url, token)
    token = kube.read_secret_key(namespace, managed.names(name)["secret"], "token")
    return ControlEndpointClient(managed.control_url(name, namespace), token)


def evaluate(body: dict[str, Any]) -> float:
    """Evaluate once; returns the seconds until the next evaluation. Never raises on bad input."""
    meta = body["metadata"]
    namespace, name, generation = meta["namespace"], meta["name"], meta.get("generation", 0)
    old = dict(body.get("status") or {})
    try:
        spec = StreamAppSpec.model_validate(body["spec"])
        policy = resolve_policy(namespace, spec)
        config = to_policy_config(policy, spec)
    except ValidationError as err:
        kube.patch_status(namespace, "streamapps", name, invalid_status(old, "; ".join(describe_errors(err)), generation))
        return RETRY_INVALID_S
    except UserError as err:
        kube.patch_status(namespace, "streamapps", name, invalid_status(old, str(err), generation))
        return RETRY_INVALID_S
    if spec.suspend or spec.engine != "spark":
        return config.evaluation_interval_s  # the reconcile handler reports these states
    client = control_client(namespace, name, spec)
    metrics = ReportingMetricsSource(PrometheusMetricsSource(
        policy.metrics.prometheus.url, policy.metrics.prometheus.queries.to_wire(), name,
        max_parallelism=spec.spark.max_parallelism))
    autoscaler = JobAutoscaler(name, config, metrics=metrics, realizer=ReplicasRealizer(namespace, name, client),
                               store=ConfigMapStateStore(body), events=KopfEventSink(body), clock=SystemClock())
    decision = _manual_override(autoscaler, spec, old, client) or autoscaler.scale()
    DECISIONS.labels(action=decision.action, guard=decision.guard or "").inc()
    realized = decision.changed and not decision.advisory and decision.guard != "realize_failed"
    status = evaluated_status(old, decision, metrics.observation, realized, metrics.problem, generation)
    _current_from_job(status, client)
    kube.patch_status(namespace, "streamapps", name, status)
    return config.evaluation_interval_s


def _manual_override(autoscaler: JobAutoscaler, spec: StreamAppSpec, old: dict[str, Any],
                     client: ControlEndpointClient) -> Decision | None:
    """Realize spec.replicas when someone other than the autoscaler changed it."""
    wanted, decided = spec.replicas, old.get("desiredExecutors")
    if wanted is None or wanted == decided:
        return None
    current = client.executors().get("current", decided or wanted)
    now = autoscaler.clock.now()
    d = Decision(job=autoscaler.job, timestamp=now, policy="manual", action="scale",
                 current={SPARK_STAGE: int(current)}, targets={SPARK_STAGE: int(wanted)},
                 reason=f"manual override: spec.replicas set to {wanted} (kubectl scale), {current} running",
                 guard="manual")
    client.set_executors(wanted)
    obs = autoscaler.metrics.observe(autoscaler.job)
    if obs is not None:
        autoscaler.record_rescale(d, obs)
    autoscaler.state.last_decision = d.to_dict()
    autoscaler.store.save(autoscaler.job, autoscaler.state.to_dict())
    autoscaler.events.emit(autoscaler.job, Event("Normal", "ManualOverride", d.reason, d.to_dict()))
    return d


def _current_from_job(status: dict[str, Any], client: ControlEndpointClient) -> None:
    """The executor count the job itself reports is fresher than Prometheus' last scrape."""
    try:
        status["currentExecutors"] = int(client.executors()["current"])
    except (ControlError, KeyError, ValueError) as err:
        ERRORS.labels(kind="control").inc()
        log.info("could not read executors from the control endpoint: %s", err)
