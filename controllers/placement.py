"""Placement in the loop: one plan for every executor the operator places, across StreamApps.

Every StreamApp whose policy asks for placement (spec.placement: elastream | ga | greedy) registers at each of its
evaluations. At most every $ELASTREAM_PLACEMENT_INTERVAL_SECONDS (60) the first evaluation to ask refreshes the
plan: each executor's load over the last $ELASTREAM_PLACEMENT_WINDOW_SECONDS (600) from Prometheus (range query, one
point per $ELASTREAM_PLACEMENT_STEP_SECONDS, 15), the nodes executors may use (Ready, schedulable, untainted,
matching the apps' spec.spark.nodeSelector) with their allocatable CPU less what the other pods on them request,
then elasticity.placement.planner. The plan is published as the ConfigMap `elastream-placement` in the operator's
namespace (kubectl can show it) and as operator metrics; each app reads its part for its status, its moves, and
the admission webhook (controllers.webhook) sends each new executor pod to its planned node.
"""
from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
from kubernetes.client.rest import ApiException
from prometheus_client import Gauge

from controllers import kube
from elastream.engines.base import MetricsUnavailable
from elastream.engines.nodes import cpu_left, pod_ref, requested_cpu, usable_node
from elastream.engines.prometheus import PrometheusClient
from elasticity.errors import InputError
from elasticity.placement.planner import NodeCapacity, PlacedExecutor, PlacementPlan, PlacementPlanner

log = logging.getLogger(__name__)
VIEW_NAME = "elastream-placement"
PLANNED_NODES = Gauge("elastream_placement_nodes", "Nodes the placement plan uses, and the nodes the placed "
                      "executors use now", ["kind"])
PREDICTED_PEAK = Gauge("elastream_placement_predicted_peak_cores", "Highest predicted CPU load (cores) of the "
                       "placed executors per node under the plan", ["node"])
NODE_CAPACITY = Gauge("elastream_placement_capacity_cores", "CPU (cores) the placed executors may use per node",
                      ["node"])


def _seconds(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


@dataclass
class PlacedApp:
    namespace: str
    name: str
    algorithm: str
    prometheus_url: str
    node_selector: dict[str, str]
    seen_at: float
    engine: Any = None  # the engine's placement answers (elastream.engines.base.EnginePlacement)
    advisor: bool = False  # advisor mode: planned and reported, never realized (no move, no pinned pod)

    @property
    def group(self) -> str:
        return f"{self.namespace}/{self.name}"


class ClusterPlacement:
    """The operator's one plan. Thread-safe: app loops register and read it from the lanes' worker threads."""

    def __init__(self):
        self.interval_s = _seconds("ELASTREAM_PLACEMENT_INTERVAL_SECONDS", 60)
        self.window_s = _seconds("ELASTREAM_PLACEMENT_WINDOW_SECONDS", 600)
        self.step_s = _seconds("ELASTREAM_PLACEMENT_STEP_SECONDS", 15)
        self.apps: dict[str, PlacedApp] = {}
        self.plan: PlacementPlan | None = None
        self.planned_at = 0.0
        self.problem: str | None = None
        self._lock = threading.Lock()
        self._refreshing = threading.Lock()

    def register(self, namespace: str, name: str, algorithm: str, prometheus_url: str,
                 node_selector: dict[str, str], engine: Any = None, advisor: bool = False) -> None:
        app = PlacedApp(namespace, name, algorithm, prometheus_url, dict(node_selector), time.time(), engine, advisor)
        with self._lock:
            self.apps[app.group] = app

    def pins(self, group: str) -> bool:
        """Whether new executor pods of this app go to their planned node (placed, and not in advisor mode)."""
        app = self.apps.get(group)
        return app is not None and not app.advisor

    def app(self, namespace: str, name: str) -> PlacedApp | None:
        return self.apps.get(f"{namespace}/{name}")

    def forget(self, namespace: str, name: str) -> None:
        with self._lock:
            self.apps.pop(f"{namespace}/{name}", None)

    def current(self) -> PlacementPlan | None:
        """The plan, refreshed first when it is older than the interval (by one caller; the others read the old)."""
        if time.time() - self.planned_at >= self.interval_s and self._refreshing.acquire(blocking=False):
            try:
                self.refresh()
            finally:
                self._refreshing.release()
        return self.plan

    def refresh(self) -> None:
        now = time.time()
        with self._lock:
            stale = [g for g, a in self.apps.items() if now - a.seen_at > 3 * self.interval_s]
            for g in stale:
                del self.apps[g]
            apps = list(self.apps.values())
        self.planned_at = now
        if not apps:
            self.plan, self.problem = None, None
            return
        try:
            placed = [self._executors(app, now) for app in apps]
            executors = [e for found, _ in placed for e in found]
            nodes = candidate_nodes(apps, {pod for _, pods in placed for pod in pods})
            algorithm, note = choose_algorithm(apps)
            plan = PlacementPlanner(algorithm).plan(executors, nodes)
        except (ApiException, MetricsUnavailable, InputError) as err:
            self.problem = f"placement not planned: {kube.api_error_message(err) if isinstance(err, ApiException) else err}"
            log.warning("%s", self.problem)
            return
        if note:
            plan.note = f"{note}; {plan.note}" if plan.note else note
        self.plan, self.problem = plan, None
        publish(plan, now)

    def _executors(self, app: PlacedApp, now: float) -> tuple[list[PlacedExecutor], set[str]]:
        """The app's executor pods (not terminating) with their measured loads on the plan's time grid, and the
        pods' "namespace/name" (their requests are the plan's to count, not the node's other pods')."""
        placement = app.engine
        pods = kube.core().list_namespaced_pod(app.namespace, label_selector=placement.executor_selector(app.name))
        steps = np.arange(now - self.window_s, now + 1e-9, self.step_s)
        series = PrometheusClient(app.prometheus_url).range(placement.load_query(app.name), steps[0], steps[-1],
                                                            self.step_s)
        loads = {labels.get(placement.load_label): _on_grid(times, values, steps) for labels, times, values in series}
        out, names = [], set()
        for pod in pods.items:
            body = kube.api_client().sanitize_for_serialization(pod)
            executor = placement.executor_id(body)
            if executor is None or body["metadata"].get("deletionTimestamp"):
                continue
            if (body.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            names.add(pod_ref(body))
            load = loads.get(executor, np.full(steps.size, np.nan))
            out.append(PlacedExecutor(f"{app.group}/{executor}", app.group, (body.get("spec") or {}).get("nodeName"),
                                      load, request=requested_cpu(body)))
        return with_app_mean(out), names

    def for_app(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The app's part of the plan, for its status: node per executor, predicted peak of those nodes."""
        plan = self.plan
        if plan is None:
            return None
        group = f"{namespace}/{name}"
        mine = {k.rsplit("/", 1)[1]: n for k, n in plan.node_of.items() if k.rsplit("/", 1)[0] == group}
        return {"algorithm": plan.algorithm, "executors": dict(sorted(mine.items())),
                "predictedPeak": {n: round(plan.predicted_peak.get(n, 0.0), 3) for n in sorted(set(mine.values()))},
                "nodesUsed": plan.nodes_used, "message": self.problem or plan.note,
                "moves": [k.rsplit("/", 1)[1] for k in plan.moves if k.rsplit("/", 1)[0] == group]}


def with_app_mean(executors: list[PlacedExecutor]) -> list[PlacedExecutor]:
    """An executor with no sample yet (just started) is expected to carry its app's mean load."""
    known = [e.load for e in executors if not np.isnan(e.load).all()]
    if known:
        stack = np.vstack(known)
        counts = (~np.isnan(stack)).sum(axis=0)
        mean = np.divide(np.nansum(stack, axis=0), counts, out=np.full(counts.size, np.nan), where=counts > 0)
        for e in executors:
            if np.isnan(e.load).all():
                e.load = mean.copy()
    return executors


def _on_grid(times: list[float], values: list[float], steps: np.ndarray) -> np.ndarray:
    """Samples at the grid's steps (NaN where the series has none within half a step)."""
    out = np.full(steps.size, np.nan)
    if not times:
        return out
    t, v = np.asarray(times), np.asarray(values)
    idx = np.clip(np.searchsorted(t, steps), 0, t.size - 1)
    near = np.abs(t[idx] - steps) <= (steps[1] - steps[0] if steps.size > 1 else 1.0) / 2 + 1e-6
    out[near] = v[idx[near]]
    return out


def choose_algorithm(apps: list[PlacedApp]) -> tuple[str, str]:
    """The one algorithm for the joint plan: the apps' own if they agree, else elastream (and a note saying so)."""
    chosen = Counter(a.algorithm for a in apps)
    if len(chosen) == 1:
        return next(iter(chosen)), ""
    return "elastream", (f"the placed apps ask for different spec.placement values ({', '.join(sorted(chosen))}): "
                         "one plan covers them all, made by elastream")


def candidate_nodes(apps: list[PlacedApp], placed_pods: set[str]) -> list[NodeCapacity]:
    """Nodes every placed app's executors may use, with the CPU left to them: allocatable less the requests of the
    other pods running there (executors being placed bring their measured load instead of their request)."""
    nodes = []
    for node in kube.core().list_node().items:
        body = kube.api_client().sanitize_for_serialization(node)
        if not usable_node(body) or not all(_matches(body, a.node_selector) for a in apps):
            continue
        name = body["metadata"]["name"]
        pods = kube.core().list_pod_for_all_namespaces(field_selector=f"spec.nodeName={name}").items
        nodes.append(NodeCapacity(name, cpu_left(body, kube.api_client().sanitize_for_serialization(pods),
                                                 placed_pods)))
    if not nodes:
        raise InputError("no node may take executors (Ready, schedulable, without NoSchedule/NoExecute taints, "
                         "matching every placed app's spec.spark.nodeSelector)")
    return nodes


def _matches(node: dict[str, Any], selector: dict[str, str]) -> bool:
    labels = (node.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def publish(plan: PlacementPlan, now: float) -> None:
    """The cluster view: operator metrics, and the ConfigMap `elastream-placement` in the operator's namespace."""
    PLANNED_NODES.labels(kind="planned").set(plan.nodes_used)
    PLANNED_NODES.labels(kind="current").set(plan.current_nodes)
    PREDICTED_PEAK.clear()
    for node, peak in plan.predicted_peak.items():
        PREDICTED_PEAK.labels(node=node).set(peak)
    for node, cap in plan.capacity.items():
        NODE_CAPACITY.labels(node=node).set(cap)
    namespace = os.environ.get("POD_NAMESPACE")
    if not namespace:
        return  # not in a pod (tests, development): the metrics are the view
    view = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": VIEW_NAME, "labels": {"app.kubernetes.io/managed-by": "elastream"}},
            "data": {"plan.json": json.dumps({**plan.to_dict(), "plannedAt": round(now, 1)}, indent=1),
                     "summary": summary(plan)}}
    try:
        try:
            kube.sync_config_map(view, namespace)
        except ApiException as err:
            if err.status != 404:
                raise
            kube.core().create_namespaced_config_map(namespace, view)
    except ApiException as err:
        log.warning("could not write the placement view: %s", kube.api_error_message(err))


def summary(plan: PlacementPlan) -> str:
    """One line per node, for `kubectl get cm elastream-placement -o jsonpath='{.data.summary}'`."""
    lines = [f"{plan.algorithm}: {plan.nodes_used} node(s) planned, {plan.current_nodes} in use now; {plan.note}".rstrip("; ")]
    for node in sorted(plan.capacity):
        placed = sorted(k for k, n in plan.node_of.items() if n == node)
        if placed:
            lines.append(f"{node}: peak {plan.predicted_peak.get(node, 0):.2f} of {plan.capacity[node]:.2f} cores: "
                         + ", ".join(placed))
    return "\n".join(lines) + "\n"


_INSTANCE: list[ClusterPlacement] = []


def cluster_placement() -> ClusterPlacement:
    if not _INSTANCE:
        _INSTANCE.append(ClusterPlacement())
    return _INSTANCE[0]


def register_app(namespace: str, name: str, spec, policy, engine_placement) -> str | None:
    """Register an app whose policy asks for placement across apps; returns why it cannot be placed, or None."""
    planner = cluster_placement()
    if engine_placement is None:
        planner.forget(namespace, name)
        return f"spec.placement: the operator does not place {spec.engine} executors"
    why = engine_placement.unsupported(spec)
    if why:
        planner.forget(namespace, name)
        return why
    planner.register(namespace, name, policy.placement, policy.metrics.prometheus.url,
                     engine_placement.node_selector(spec), engine_placement, advisor=policy.mode == "advisor")
    return None
