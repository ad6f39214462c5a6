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
from controllers.metrics import DECISIONS, DESIRED_EXECUTORS, ERRORS, REALIZE_SECONDS
from controllers.state_store import ConfigMapStateStore
from controllers.status import evaluated_status, invalid_status, unavailable_status
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
    """The job's control endpoint with its token; SecretProblem (message naming the field) if the token is missing."""
    attach = spec.spark.attach
    if attach is not None:
        ref = attach.token_secret_ref
        try:
            token = kube.read_secret_key(namespace, ref.name, ref.key)
        except kube.SecretProblem as err:
            field = "spec.spark.attach.tokenSecretRef" + (".key" if err.reason == "SecretKeyNotFound" else "")
            raise kube.SecretProblem(err.reason, f"{field}: {err}") from None
        return ControlEndpointClient(attach.control_url, token)
    try:
        token = kube.read_secret_key(namespace, managed.names(name)["secret"], "token")
    except kube.SecretProblem as err:
        raise kube.SecretProblem(err.reason, f"{err} (the control token the operator creates; it is created "
                                 "again at the next resync)") from None
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
        return _report(body, lambda st: invalid_status(st, "; ".join(describe_errors(err)), generation))
    except UserError as err:
        return _report(body, lambda st: invalid_status(st, str(err), generation))
    if spec.suspend or spec.engine != "spark":
        return config.evaluation_interval_s  # the reconcile pass reports these states
    try:
        client = control_client(namespace, name, spec)
    except kube.SecretProblem as err:  # looked for again soon: creating the Secret is all it takes
        _report(body, lambda st: unavailable_status(st, err.reason, str(err), generation))
        return min(RETRY_INVALID_S, config.evaluation_interval_s)
    metrics = ReportingMetricsSource(PrometheusMetricsSource(
        policy.metrics.prometheus.url, policy.metrics.prometheus.queries.to_wire(), name,
        max_parallelism=spec.spark.max_parallelism))
    autoscaler = JobAutoscaler(name, config, metrics=metrics, realizer=ReplicasRealizer(namespace, name, client),
                               store=ConfigMapStateStore(body), events=KopfEventSink(body), clock=SystemClock())
    decision = _manual_override(autoscaler, spec, old, client) or autoscaler.scale()
    DECISIONS.labels(action=decision.action, guard=decision.guard or "").inc()
    realized = decision.changed and not decision.advisory and decision.guard != "realize_failed"
    current = _current_from_job(client)

    def change(fresh: dict[str, Any]) -> dict[str, Any]:
        status = {**fresh, **evaluated_status(fresh, decision, metrics.observation, realized, metrics.problem,
                                              generation)}
        if current is not None:
            status["currentExecutors"] = current
        return status

    written = kube.update_status(namespace, name, change)
    desired = ((written or {}).get("status") or {}).get("desiredExecutors")
    if desired is not None:  # the dashboard's "desired" line: the same number as status.desiredExecutors
        DESIRED_EXECUTORS.labels(namespace=namespace, streamapp=name).set(desired)
    return config.evaluation_interval_s


def _report(body: dict[str, Any], change) -> float:
    """Write a status that says why nothing was evaluated; retry later."""
    kube.update_status(body["metadata"]["namespace"], body["metadata"]["name"], change)
    return RETRY_INVALID_S


def _manual_override(autoscaler: JobAutoscaler, spec: StreamAppSpec, old: dict[str, Any],
                     client: ControlEndpointClient) -> Decision | None:
    """Realize spec.replicas when someone other than the autoscaler changed it."""
    wanted, decided = spec.replicas, old.get("desiredExecutors")
    if wanted is None or wanted == decided:
        return None
    current = int(client.executors().get("current", decided or wanted))
    reason = f"manual override: spec.replicas set to {wanted} (kubectl scale), {current} running"
    return autoscaler.override({SPARK_STAGE: int(wanted)}, reason, current={SPARK_STAGE: current})


def _current_from_job(client: ControlEndpointClient) -> int | None:
    """The executor count the job itself reports is fresher than Prometheus' last scrape."""
    try:
        return int(client.executors()["current"])
    except (ControlError, KeyError, ValueError) as err:
        ERRORS.labels(kind="control").inc()
        log.info("could not read executors from the control endpoint: %s", err)
        return None
