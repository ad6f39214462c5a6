"""A Spark job as the operator sees it: metrics from Prometheus, rescales through the runner's control endpoint
(managed: the driver's Service; attached: spec.spark.attach), spec.replicas as the desired executor count."""
from __future__ import annotations

import logging
import time

from controllers import kube
from controllers.metrics import ERRORS, REALIZE_SECONDS
from elastream.api.policy import ElasticityPolicySpec
from elastream.api.streamapp import StreamAppSpec
from elastream.engines.prometheus import PrometheusClient
from elastream.engines.spark import managed
from elastream.engines.spark.control import ControlEndpointClient, ControlError
from elastream.engines.spark.observation import SPARK_STAGE, PrometheusSparkSource
from elasticity.model import Decision

log = logging.getLogger(__name__)


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


class SparkOperatorJob:
    def __init__(self, namespace: str, name: str, spec: StreamAppSpec, policy: ElasticityPolicySpec):
        self.namespace, self.name = namespace, name
        self.client = control_client(namespace, name, spec)
        prometheus = policy.metrics.prometheus
        self.metrics = PrometheusSparkSource(PrometheusClient(prometheus.url), prometheus.queries.to_wire(), name,
                                             max_parallelism=spec.spark.max_parallelism,
                                             executor_cores=spec.spark.executor.cores)

    def realizer(self) -> ReplicasRealizer:
        return ReplicasRealizer(self.namespace, self.name, self.client)

    def current(self) -> dict[str, int] | None:
        """The executor count the job itself reports is fresher than Prometheus' last scrape."""
        try:
            return {SPARK_STAGE: int(self.client.executors()["current"])}
        except (ControlError, KeyError, ValueError) as err:
            ERRORS.labels(kind="control").inc()
            log.info("could not read executors from the control endpoint: %s", err)
            return None

    def manual_override(self, spec_replicas: int | None, decided: int | None):
        """Realize spec.replicas when someone other than the autoscaler changed it."""
        if spec_replicas is None or spec_replicas == decided:
            return None
        current = int(self.client.executors().get("current", decided or spec_replicas))
        reason = f"manual override: spec.replicas set to {spec_replicas} (kubectl scale), {current} running"
        return {SPARK_STAGE: int(spec_replicas)}, {SPARK_STAGE: current}, reason
