"""Supervisor pods follow the workers of a managed Storm app (the realizer calls `before` and `after` each rebalance).

Workers need slots, and slots come with supervisor pods (`slotsPerSupervisor` each): ceil(workers / slots) pods.

- More workers: the supervisors' Deployment is scaled up *before* the rebalance, and the rebalance waits until
  Nimbus lists them (Nimbus silently caps workers at the free slots, so a rebalance sent earlier would run fewer).
- Fewer workers: the supervisors to drop are removed *before* the rebalance too. Storm's default scheduler spreads
  a topology's workers evenly over every supervisor it knows, so after a scale-in rebalance no supervisor would be
  idle; removing the least loaded ones first lets the rebalance place the workers on those that stay. The cost is
  no extra stall: the rebalance restarts every worker whose assignment changes anyway. The ones to go get a low
  `controller.kubernetes.io/pod-deletion-cost`, so the ReplicaSet deletes exactly them when it scales down.
- `after` removes supervisors that are still idle beyond what the workers need (e.g. when Storm placed fewer).

Kubernetes calls go through the official client; Nimbus through storm_apps.nimbus. Errors surface as
JobUnreachable (the autoscaler then records a failed rescale and keeps the old layout).
"""
from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from elastream.engines.base import JobUnreachable
from elastream.engines.owners import LABEL_APP, LABEL_ROLE

log = logging.getLogger(__name__)
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"


@dataclass
class SupervisorChange:
    """One change of the supervisors' number, for logs, status and the benchmark."""

    before: int
    after: int
    seconds: float  # scale call -> Nimbus lists the new number


@dataclass
class Supervisors:
    namespace: str
    app: str
    slots: int  # slots per supervisor pod
    nimbus: Any  # storm_apps.nimbus.NimbusClient
    deployment: str = ""
    timeout_s: float = 180.0
    poll_s: float = 1.0
    apps_api: Any = None  # kubernetes.client.AppsV1Api (default: from controllers.kube)
    core_api: Any = None  # kubernetes.client.CoreV1Api
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    changes: list[SupervisorChange] = field(default_factory=list)

    def __post_init__(self):
        from elastream.engines.storm.managed import names

        self.deployment = self.deployment or names(self.app)["supervisor"]

    def needed(self, workers: int) -> int:
        return max(1, math.ceil(workers / self.slots))

    # -- the hooks --------------------------------------------------------------------------------------------

    def before(self, workers: int) -> None:
        """Before a rebalance to `workers` workers: exactly the supervisors it needs, and Nimbus sees them."""
        want, have = self.needed(workers), self.replicas()
        if want > have:
            self._scale(have, want, lambda: self._listed() >= want)
        elif want < have:
            self._remove(have - want, workers, only_idle=False)

    def after(self, workers: int) -> None:
        """After a rebalance: supervisors beyond what `workers` need that Storm left idle go."""
        want, have = self.needed(workers), self.replicas()
        if have > want:
            self._remove(have - want, workers, only_idle=True)

    # -- Kubernetes -------------------------------------------------------------------------------------------

    def _apps(self):
        if self.apps_api is None:
            import kubernetes

            from controllers import kube

            self.apps_api = kubernetes.client.AppsV1Api(kube.api_client())
        return self.apps_api

    def _core(self):
        if self.core_api is None:
            from controllers import kube

            self.core_api = kube.core()
        return self.core_api

    def replicas(self) -> int:
        scale = self._apps().read_namespaced_deployment_scale(self.deployment, self.namespace)
        return int(scale.spec.replicas or 0)

    def pods(self) -> list[dict[str, Any]]:
        resp = self._core().list_namespaced_pod(
            self.namespace, label_selector=f"{LABEL_APP}={self.app},{LABEL_ROLE}=supervisor", _preload_content=False)
        return [p for p in json.loads(resp.data).get("items", []) if not p["metadata"].get("deletionTimestamp")]

    def _set_replicas(self, n: int) -> None:
        self._apps().patch_namespaced_deployment_scale(self.deployment, self.namespace, {"spec": {"replicas": n}})

    # -- Nimbus -----------------------------------------------------------------------------------------------

    def _supervisors(self) -> list[Any]:
        from storm_apps.nimbus import NimbusUnavailable

        try:
            return list(self.nimbus.cluster().supervisors)
        except NimbusUnavailable as err:
            raise JobUnreachable(str(err)) from err

    def _listed(self) -> int:
        return len(self._supervisors())

    # -- changes ----------------------------------------------------------------------------------------------

    def _scale(self, have: int, want: int, done: Callable[[], bool]) -> None:
        t0 = self.clock()
        self._set_replicas(want)
        while not done():
            if self.clock() - t0 > self.timeout_s:
                raise JobUnreachable(f"supervisors {have} -> {want}: Nimbus lists {self._listed()} after "
                                     f"{self.timeout_s:.0f}s (see the {self.deployment} pods)")
            self.sleep(self.poll_s)
        change = SupervisorChange(have, want, round(self.clock() - t0, 2))
        self.changes.append(change)
        log.info("%s/%s: supervisors %d -> %d, Nimbus lists them after %.1fs", self.namespace, self.app, have, want,
                 change.seconds)

    def _remove(self, count: int, workers: int, only_idle: bool) -> None:
        """Remove `count` supervisors (fewer when only idle ones may go), the least loaded first."""
        chosen = self.choose(self.pods(), self._supervisors(), count, only_idle)
        if not chosen:
            return
        for pod in chosen:
            self._core().patch_namespaced_pod(pod["metadata"]["name"], self.namespace,
                                              {"metadata": {"annotations": {DELETION_COST: "-1000"}}})
        have = self.replicas()
        want = have - len(chosen)
        gone = {p["status"].get("podIP") for p in chosen}
        self._scale(have, want, lambda: not gone & {_host(s) for s in self._supervisors()})

    @staticmethod
    def choose(pods: list[dict[str, Any]], listed: list[Any], count: int, only_idle: bool) -> list[dict[str, Any]]:
        """The pods to remove: pods Nimbus does not list yet (starting, broken) first, then by used slots, fewest
        first; only those with no used slot when `only_idle`."""
        used = {_host(s): _used(s) for s in listed}

        def load(pod):
            ip = (pod.get("status") or {}).get("podIP")
            return (ip in used, used.get(ip, 0), pod["metadata"].get("creationTimestamp") or "")

        candidates = sorted(pods, key=load, reverse=False)
        if only_idle:
            candidates = [p for p in candidates if used.get((p.get("status") or {}).get("podIP"), 0) == 0]
        return candidates[:max(0, count)]


def _host(s: Any) -> str:
    """A supervisor's host as Nimbus lists it (SupervisorSummary.host: the pod IP, storm.local.hostname)."""
    return s.host or ""


def _used(s: Any) -> int:
    """Slots a supervisor's workers use (SupervisorSummary.num_used_workers)."""
    return int(s.num_used_workers or 0)
