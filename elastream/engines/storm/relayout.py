"""Where a topology's workers run, and the move that lays a topology out by a traffic plan (the Mover port).

A relayout is one Nimbus rebalance carrying the plan in its topology conf; elastream's PlanScheduler places every
executor as planned. Once Nimbus has taken the rebalance the workers restart, so the move counts (one rescale)
even when the plan does not take in time: the guards then keep the operator from rebalancing again at once.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable

from elastream.engines.base import JobUnreachable
from storm_apps import traffic

log = logging.getLogger(__name__)


@dataclass
class Slots:
    """Which supervisor holds each worker slot, and the slots this topology may plan on."""

    node_of: dict[tuple[str, int], str]  # (host, port) of a worker -> its supervisor's name
    free: dict[str, int]  # supervisor -> slots free or held by this topology

    def __call__(self, host: str, port: int) -> str:
        return self.node_of.get((host, int(port)), host)


def read_slots(nimbus, topology_id: str) -> Slots:
    """Supervisors are named by host where hosts are unique (a pod IP on Kubernetes), else by id (PlanScheduler
    accepts both)."""
    supervisors = list(nimbus.cluster().supervisors or [])
    hosts = [s.host for s in supervisors]
    name = {s.supervisor_id: s.host if hosts.count(s.host) == 1 else s.supervisor_id for s in supervisors}
    workers = nimbus.workers_by_id(topology_id)
    node_of = {(host, port): name.get(sid, sid) for sid, host, port in workers}
    held = {n: sum(1 for v in node_of.values() if v == n) for n in name.values()}
    free = {name[s.supervisor_id]: int(s.num_workers or 0) - max(0, int(s.num_used_workers or 0)
                                                                   - held[name[s.supervisor_id]])
            for s in supervisors}
    return Slots(node_of, free)


@dataclass
class SlotNames:
    """node_of_slot for a topology whose workers are moving: a slot new to it is looked up in Nimbus (a slot's
    supervisor never changes, so what is known stays true)."""

    nimbus: Any
    topology_id: str
    known: dict[tuple[str, int], str] = field(default_factory=dict)

    def __call__(self, host: str, port: int) -> str:
        if (host, int(port)) not in self.known:
            self.known.update(read_slots(self.nimbus, self.topology_id).node_of)
        return self.known.get((host, int(port)), host)


@dataclass
class StormRelayout:
    """Mover port: rebalance with the plan, wait until Nimbus runs it, then `on_applied`; `after` (managed apps)
    drops the supervisor pods the plan left idle."""

    nimbus: Any  # storm_apps.nimbus.NimbusClient
    topology: str
    topology_id: str
    plan: traffic.TrafficPlan
    workers: int
    after: Callable[[int], None] | None = None
    on_applied: Callable[[traffic.TrafficPlan], None] | None = None
    timeout_s: float = 180.0

    def move(self, job: str, executors: list[str]) -> list[str]:
        try:
            t0 = traffic.apply(self.nimbus, self.topology, self.plan)
        except ConnectionError as err:  # refused or unreachable: nothing moved
            raise JobUnreachable(str(err)) from err
        try:
            seconds = traffic.wait_laid_out(self.nimbus, self.topology, self.topology_id, self.plan,
                                            SlotNames(self.nimbus, self.topology_id), t0, self.timeout_s)
        except (TimeoutError, ConnectionError) as err:  # the workers restarted all the same: it was a rescale
            log.warning("%s rebalanced with its plan, which Nimbus does not run: %s", self.topology, err)
            return list(executors)
        log.info("%s laid out as planned in %.1fs", self.topology, seconds)
        if self.on_applied is not None:
            self.on_applied(self.plan)
        if self.after is not None:
            try:
                self.after(self.workers)
            except JobUnreachable as err:  # the idle supervisors stay until the next rebalance
                log.warning("%s: idle supervisors not removed: %s", self.topology, err)
        return list(executors)
