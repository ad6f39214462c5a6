"""Storm placement in the operator: seed 002's ETW/WTN over the tuple rates measured between a topology's executors,
applied by Nimbus running elastream's PlanScheduler (storm_apps/scheduler, `storm.scheduler`).

Each evaluation reads the topology from Nimbus. Rates need two readings of one layout, at least MIN_WINDOW_S apart:
the previous reading is kept per app, in memory (an operator restart measures again). The plan puts the topology's
workers on the supervisors' slots (free ones, and those the topology holds: a rebalance frees them). It is applied
when it cuts enough of the traffic between workers and supervisors to pay for the rebalance
(elasticity.placement.traffic.worth_relayout): one rebalance carrying the plan in the topology conf lays out every
executor, so the guards count it as one rescale. Afterwards a managed app's idle supervisor pods go.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from elastream.engines.base import AppLayout, JobUnreachable
from elasticity.placement.traffic import TrafficPlacer, cut_of, worth_relayout
from storm_apps import traffic
from storm_apps.distribution import SCHEDULER_CLASS

log = logging.getLogger(__name__)
MIN_WINDOW_S = 15.0  # rates over less are a few tuples per pair: too noisy to move a topology for
FORGET_AFTER_S = 3600.0  # readings of apps not evaluated for this long are dropped


def executor_label(component: str, tasks: traffic.Tasks) -> str:
    """How status names an executor: its component and task range, e.g. enrich[3-4]."""
    return f"{component}[{tasks[0]}-{tasks[1]}]"


@dataclass
class Slots:
    """Which supervisor holds each worker slot, and the slots this topology may plan on."""

    node_of: dict[tuple[str, int], str]  # (host, port) of a worker -> its supervisor's name
    free: dict[str, int]  # supervisor -> slots free or held by this topology

    def __call__(self, host: str, port: int) -> str:
        return self.node_of.get((host, int(port)), host)


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
class StormRelayout:
    """Mover port: one rebalance that hands the plan to PlanScheduler, then waits until Nimbus runs it; `after`
    (managed apps) drops the supervisor pods the plan left idle."""

    nimbus: Any  # storm_apps.nimbus.NimbusClient
    topology: str
    topology_id: str
    plan: traffic.TrafficPlan
    workers: int
    after: Any = None  # (workers) -> None
    on_applied: Callable[[], None] | None = None  # called once Nimbus runs the plan
    timeout_s: float = 180.0

    def move(self, job: str, executors: list[str]) -> list[str]:
        try:
            seconds = traffic.realize(self.nimbus, self.topology, self.topology_id, self.plan,
                                      SlotNames(self.nimbus, self.topology_id), timeout_s=self.timeout_s)
        except ConnectionError as err:  # NimbusUnavailable, NimbusRefused
            raise JobUnreachable(str(err)) from err
        log.info("%s laid out as planned in %.1fs", self.topology, seconds)
        if self.on_applied is not None:
            self.on_applied()
        if self.after is not None:
            self.after(self.workers)
        return list(executors)


@dataclass
class StormPlacement:
    """The Storm engine's answers for placement (elastream.engines.base.AppPlacement)."""

    scope: str = "app"
    readings: dict[str, tuple[str, traffic.Snapshot]] = field(default_factory=dict)  # app -> (topology id, last)
    applied: dict[str, tuple[str, traffic.TrafficPlan]] = field(default_factory=dict)  # app -> (topology id, plan)
    job_for: Callable[..., Any] | None = None  # (namespace, name, spec, policy) -> StormOperatorJob (tests: a fake)
    clock: Callable[[], float] = time.monotonic

    def forget(self, namespace: str, name: str) -> None:
        self.readings.pop(f"{namespace}/{name}", None)
        self.applied.pop(f"{namespace}/{name}", None)

    def layout(self, namespace: str, name: str, spec, policy) -> AppLayout:
        from elastream.engines.storm.operator import StormOperatorJob

        job = (self.job_for or StormOperatorJob)(namespace, name, spec, policy)
        algorithm = policy.placement
        try:
            return self._layout(f"{namespace}/{name}", job, algorithm)
        except ConnectionError as err:  # NimbusUnavailable, NimbusRefused
            raise JobUnreachable(str(err)) from err
        except ValueError as err:  # the plan cannot be made (too few free slots)
            return AppLayout({"algorithm": algorithm, "message": f"no plan: {err}"})

    def _layout(self, key: str, job, algorithm: str) -> AppLayout:
        nimbus = job.nimbus
        problem = scheduler_problem(nimbus.conf(), f"{nimbus.host}:{nimbus.port}")
        if problem:
            return AppLayout({"algorithm": algorithm, "message": problem})
        measured = self._measure(key, nimbus, job.topology)
        if isinstance(measured, str):
            return AppLayout({"algorithm": algorithm, "message": measured})
        topology_id, rates = measured
        slots = read_slots(nimbus, topology_id)
        workers = len({(e.host, e.port) for e in rates.executors.values()})
        plan = TrafficPlacer(workers, refine=algorithm != "greedy").plan(rates.loads, rates.rates, slots.free)
        return self._decide(key, job, topology_id, rates, slots, plan, algorithm, workers)

    def _measure(self, key: str, nimbus, topology: str) -> tuple[str, traffic.Traffic] | str:
        """(topology id, rates) once two readings of one layout are far enough apart; else what it waits for."""
        self._drop_stale()
        topology_id = nimbus.topology_id(topology)
        if topology_id is None:
            return f"waiting for topology {topology} in Nimbus"
        info = nimbus.info_by_id(topology_id)
        if info.status != "ACTIVE":
            return f"waiting: topology {topology} is {info.status}"
        now = traffic.snapshot(info, at=self.clock())
        seen_id, before = self.readings.get(key, (None, None))
        if before is None or seen_id != topology_id or before.executors != now.executors:
            self.readings[key] = (topology_id, now)
            return "measuring the tuple rates between executors (first reading of this layout)"
        if now.at - before.at < MIN_WINDOW_S:
            return f"measuring the tuple rates between executors ({now.at - before.at:.0f}s of {MIN_WINDOW_S:.0f}s)"
        self.readings[key] = (topology_id, now)
        rates = traffic.traffic(before, now)
        if not rates.rates:
            return f"no tuples between executors in the last {rates.window_s:.0f}s: nothing to place by"
        return topology_id, rates

    def _decide(self, key: str, job, topology_id: str, rates: traffic.Traffic, slots: Slots, plan,
                algorithm: str, workers: int) -> AppLayout:
        live_worker = {t: (e.host, e.port) for t, e in rates.executors.items()}
        now = cut_of(rates.rates, live_worker, {t: slots(*w) for t, w in live_worker.items()})
        planned = cut_of(rates.rates, plan.worker_of, {t: plan.node_of(t) for t in plan.worker_of})
        note = ("ga packs CPU load profiles; a Storm topology is placed by its traffic, with elastream's ETW/WTN; "
                if algorithm == "ga" else "")
        nodes = len({slots(*w) for w in live_worker.values()})
        running = f"the topology runs as planned: {workers} worker(s) on {nodes} node(s)"
        if traffic.follows(plan, rates.executors, slots):
            return AppLayout(_status(algorithm, rates, plan, now, planned, note + running))
        worth, why = worth_relayout(now, planned)
        if worth:
            moving = sorted(executor_label(rates.executors[t].component, t) for t in plan.worker_of
                            if _moves(t, plan, live_worker, slots))
            mover = StormRelayout(job.nimbus, job.topology, topology_id, plan, workers, after=job.after_relayout(),
                                  on_applied=lambda: self.applied.__setitem__(key, (topology_id, plan)))
            return AppLayout(_status(algorithm, rates, plan, now, planned, note + why), moving,
                             f"the traffic plan ({algorithm}): {why}", mover)
        applied_id, applied = self.applied.get(key, (None, None))
        if applied_id == topology_id and applied is not None and traffic.follows(applied, rates.executors, slots):
            # the plan applied earlier still runs, and a new one would not pay for a rebalance: report the one in effect
            change = why.removeprefix("not worth a rebalance: ")
            return AppLayout(_status(algorithm, rates, applied, now, now,
                                     f"{note}{running}; a new plan would change {change}"))
        return AppLayout(_status(algorithm, rates, plan, now, planned, note + why))

    def _drop_stale(self) -> None:
        cutoff = self.clock() - FORGET_AFTER_S
        for key in [k for k, (_, r) in self.readings.items() if r.at < cutoff]:
            del self.readings[key]
            self.applied.pop(key, None)


def _status(algorithm: str, rates: traffic.Traffic, plan, now, planned, message: str) -> dict[str, Any]:
    """status.placement: node per executor and the busy cores per node under `plan`, the traffic now and under it."""
    peak: dict[str, float] = {}
    for t, load in rates.loads.items():
        peak[plan.node_of(t)] = peak.get(plan.node_of(t), 0.0) + load
    return {
        "algorithm": algorithm,
        "executors": {executor_label(rates.executors[t].component, t): plan.node_of(t) for t in sorted(plan.worker_of)},
        "predictedPeak": {n: round(v, 3) for n, v in sorted(peak.items())},
        "nodesUsed": len(set(plan.node_of_worker.values())),
        "traffic": {"betweenWorkers": round(now.between_workers, 2), "betweenNodes": round(now.between_nodes, 2),
                    "plannedBetweenWorkers": round(planned.between_workers, 2),
                    "plannedBetweenNodes": round(planned.between_nodes, 2)},
        "message": message,
    }


def _moves(t: traffic.Tasks, plan, live_worker: dict, slots: Slots) -> bool:
    """Whether an executor changes worker: other worker-mates, or another node."""
    mates = {u for u, w in live_worker.items() if w == live_worker[t]}
    planned_mates = {u for u, w in plan.worker_of.items() if w == plan.worker_of[t]}
    return mates != planned_mates or slots(*live_worker[t]) != plan.node_of(t)


def scheduler_problem(conf: dict, where: str) -> str | None:
    """Why this Nimbus cannot apply a plan (its storm.scheduler is not PlanScheduler), naming the field, or None."""
    scheduler = conf.get("storm.scheduler")
    if scheduler == SCHEDULER_CLASS:
        return None
    return (f"spec.placement: Nimbus at {where} schedules with {scheduler or 'the default scheduler'}, not "
            f"{SCHEDULER_CLASS}: set storm.scheduler in its storm.yaml and put the scheduler's jar in extlib/ "
            "(docs/storm.md, Placement)")
