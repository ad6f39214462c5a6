"""A Storm topology as the operator sees it: per-component metrics from Prometheus (scraped from the Storm
exporter), rescales through Nimbus Thrift rebalance: the attached cluster's Nimbus (spec.storm.attach), or the
app's own Nimbus Service (managed mode), where the supervisor pods follow the workers around each rebalance."""
from __future__ import annotations

import logging

from controllers.metrics import ERRORS, REALIZE_SECONDS
from elastream.api.policy import ElasticityPolicySpec
from elastream.api.streamapp import StreamAppSpec
from elastream.engines.storm import managed
from elastream.engines.prometheus import PrometheusClient
from elastream.engines.storm.observation import PrometheusStormSource
from elastream.engines.storm.realizer import Rebalance, RebalanceRealizer
from elastream.engines.storm.supervisors import Supervisors
from storm_apps.nimbus import NimbusClient

log = logging.getLogger(__name__)


def nimbus_address(namespace: str, name: str, spec: StreamAppSpec) -> tuple[str, int]:
    """The attached cluster's Nimbus, or the managed app's Nimbus Service."""
    attach = spec.storm.attach
    if attach is None:
        return managed.dns(name, namespace, "nimbus"), managed.NIMBUS_PORT
    return attach.nimbus_host, attach.nimbus_port


class StormOperatorJob:
    def __init__(self, namespace: str, name: str, spec: StreamAppSpec, policy: ElasticityPolicySpec):
        host, port = nimbus_address(namespace, name, spec)
        self.namespace, self.name, self.placed = namespace, name, policy.placement != "none"
        self.spec, self.topology = spec.storm, spec.storm.topology_name(name)
        self.nimbus = NimbusClient(host, port, timeout_s=10)
        self.metrics = PrometheusStormSource(PrometheusClient(policy.metrics.prometheus.url), name,
                                             self.spec.max_parallelism)

    def supervisors(self) -> Supervisors | None:
        """Managed apps' supervisor pods, which follow the workers; None when attached (not ours to change)."""
        if self.spec.attach is not None:
            return None
        return Supervisors(self.namespace, self.name, self.spec.slots_per_supervisor, self.nimbus)

    def after_relayout(self):
        """What runs after a placement rebalance: idle supervisor pods go (managed apps), or None."""
        supervisors = self.supervisors()
        return supervisors.after if supervisors is not None else None

    def realizer(self) -> RebalanceRealizer:
        w = self.spec.workers
        hooks = {}
        supervisors = self.supervisors()
        if supervisors is not None:
            hooks = {"before": supervisors.before, "after": supervisors.after}
        return RebalanceRealizer(self.nimbus, self.topology, self.spec.executors_per_worker, (w.min, w.max),
                                 on_rebalance=_observe, ends_plan=self.placed, **hooks)

    def current(self) -> dict[str, int] | None:
        """Executors per component as Nimbus has them now (fresher than the last scrape)."""
        try:
            state = self.nimbus.topology(self.topology)
        except (ConnectionError, LookupError) as err:  # the client's NimbusUnavailable is a ConnectionError
            ERRORS.labels(kind="control").inc()
            log.info("could not read the layout of %s from Nimbus: %s", self.topology, err)
            return None
        return {c.name: c.executors for c in state.components} if state is not None else None

    def manual_override(self, spec_replicas: int | None, decided: int | None):
        """Storm's workers follow the executors the policy plans per component, so spec.replicas is not read."""
        return None


def _observe(done: Rebalance) -> None:
    REALIZE_SECONDS.observe(done.layout_s)
