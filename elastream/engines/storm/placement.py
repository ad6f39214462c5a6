"""Storm placement in the operator: seed 002's ETW/WTN over the tuple rates measured between a topology's executors,
applied by Nimbus running elastream's PlanScheduler (storm_apps/scheduler, `storm.scheduler`).

Each evaluation reads the topology from Nimbus. Rates need two readings of one layout, at least MIN_WINDOW_S apart,
in which every executor has reported its statistics: the previous reading is kept per app, in memory (an operator
restart measures again). The plan puts the topology's workers on the supervisors' slots (free ones, and those the
topology holds: a rebalance frees them). It is applied when it cuts enough of the traffic between workers and
supervisors to pay for the rebalance (elasticity.placement.traffic.worth_relayout), by one rebalance that counts as
one rescale (elastream.engines.storm.relayout).

One StormPlacement serves every app, from the operator's worker threads: its state is behind a lock.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from elastream.engines.base import AppLayout, JobUnreachable
from elastream.engines.storm.relayout import Slots, StormRelayout, read_slots
from elasticity.placement.traffic import TrafficCut, TrafficPlacer, cut_of, worth_relayout
from storm_apps import traffic
from storm_apps.distribution import SCHEDULER_CLASS

MIN_WINDOW_S = 15.0  # rates over less are a few tuples per pair: too noisy to move a topology for
FORGET_AFTER_S = 3600.0  # other apps' readings older than this are dropped (apps gone, or no longer placed)
GA_NOTE = "ga packs CPU load profiles; a Storm topology is placed by its traffic, with elastream's ETW/WTN; "


def executor_label(component: str, tasks: traffic.Tasks) -> str:
    """How status names an executor: its component and task range, e.g. enrich[3-4]."""
    return f"{component}[{tasks[0]}-{tasks[1]}]"


@dataclass
class AppState:
    topology_id: str
    reading: traffic.Snapshot  # the last reading of the current layout
    applied: traffic.TrafficPlan | None = None  # the plan Nimbus was last seen running
    status: dict[str, Any] | None = None  # the last full status.placement, shown again while measuring


@dataclass
class StormPlacement:
    """The Storm engine's answers for placement (elastream.engines.base.AppPlacement)."""

    scope: str = "app"
    job_for: Callable[..., Any] | None = None  # (namespace, name, spec, policy) -> StormOperatorJob (tests: a fake)
    clock: Callable[[], float] = time.monotonic
    apps: dict[str, AppState] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def forget(self, namespace: str, name: str) -> None:
        with self._lock:
            self.apps.pop(f"{namespace}/{name}", None)

    def layout(self, namespace: str, name: str, spec, policy) -> AppLayout:
        from elastream.engines.storm.operator import StormOperatorJob

        job = (self.job_for or StormOperatorJob)(namespace, name, spec, policy)
        try:
            return self._layout(f"{namespace}/{name}", job, policy.placement)
        except ConnectionError as err:  # NimbusUnavailable, NimbusRefused
            raise JobUnreachable(str(err)) from err

    def _layout(self, key: str, job, algorithm: str) -> AppLayout:
        note = GA_NOTE if algorithm == "ga" else ""
        nimbus = job.nimbus
        problem = scheduler_problem(nimbus.conf(), f"{nimbus.host}:{nimbus.port}")
        if problem:
            return AppLayout({"algorithm": algorithm, "message": problem})
        measured = self._measure(key, nimbus, job.topology)
        if isinstance(measured, str):
            return AppLayout(self._waiting(key, algorithm, note + measured))
        topology_id, rates = measured
        slots = read_slots(nimbus, topology_id)
        workers = len({(e.host, e.port) for e in rates.executors.values()})
        try:
            plan = TrafficPlacer(workers, refine=algorithm != "greedy").plan(rates.loads, rates.rates, slots.free)
        except ValueError as err:  # too few free slots
            return AppLayout({"algorithm": algorithm, "message": f"{note}no plan: {err}"})
        layout = self._decide(key, job, topology_id, rates, slots, plan, algorithm, note)
        with self._lock:
            if key in self.apps:
                self.apps[key].status = layout.status
        return layout

    def _measure(self, key: str, nimbus, topology: str) -> tuple[str, traffic.Traffic] | str:
        """(topology id, rates) once two full readings of one layout are far enough apart; else what it waits for."""
        topology_id = nimbus.topology_id(topology)
        if topology_id is None:
            return f"waiting for topology {topology} in Nimbus"
        info = nimbus.info_by_id(topology_id)
        if info.status != "ACTIVE":
            return f"waiting: topology {topology} is {info.status}"
        now = traffic.snapshot(info, at=self.clock())
        if set(now.emitted) != set(now.executors):  # a restarted worker has not reported yet
            return "waiting for every executor's statistics"
        with self._lock:
            self._drop_stale(key)
            state = self.apps.get(key)
            if state is None or state.topology_id != topology_id or state.reading.executors != now.executors:
                applied = state.applied if state is not None and state.topology_id == topology_id else None
                self.apps[key] = AppState(topology_id, now, applied, state.status if applied else None)
                return "measuring the tuple rates between executors (first reading of this layout)"
            before = state.reading
            if now.at - before.at < MIN_WINDOW_S:
                return f"measuring the tuple rates between executors ({now.at - before.at:.0f}s of {MIN_WINDOW_S:.0f}s)"
            state.reading = now
        rates = traffic.traffic(before, now)
        if not rates.rates:
            return f"no tuples between executors in the last {rates.window_s:.0f}s: nothing to place by"
        return topology_id, rates

    def _waiting(self, key: str, algorithm: str, message: str) -> dict[str, Any]:
        """While measuring: the last full status (the plan in effect), with what the step waits for."""
        with self._lock:
            last = self.apps[key].status if key in self.apps else None
        return {**last, "message": message} if last else {"algorithm": algorithm, "message": message}

    def _decide(self, key: str, job, topology_id: str, rates: traffic.Traffic, slots: Slots, plan,
                algorithm: str, note: str) -> AppLayout:
        live_worker = {t: (e.host, e.port) for t, e in rates.executors.items()}
        now = cut_of(rates.rates, live_worker, {t: slots(*w) for t, w in live_worker.items()})
        planned = cut_of(rates.rates, plan.worker_of, {t: plan.node_of(t) for t in plan.worker_of})
        running = (f"the topology runs as planned: {len(set(live_worker.values()))} worker(s) on "
                   f"{len({slots(*w) for w in live_worker.values()})} node(s)")
        if traffic.follows(plan, rates.executors, slots):
            self._applied(key, plan)
            return AppLayout(_status(algorithm, rates, plan, now, planned, note + running))
        worth, why = worth_relayout(now, planned)
        if worth:
            moving = sorted(executor_label(rates.executors[t].component, t) for t in plan.worker_of
                            if _moves(t, plan, live_worker, slots))
            mover = StormRelayout(job.nimbus, job.topology, topology_id, plan, len(set(live_worker.values())),
                                  after=job.after_relayout(), on_applied=lambda p: self._applied(key, p))
            return AppLayout(_status(algorithm, rates, plan, now, planned, note + why), moving,
                             f"the traffic plan ({'elastream' if note else algorithm}): {why}", mover)
        with self._lock:
            applied = self.apps[key].applied if key in self.apps else None
        if applied is not None and traffic.follows(applied, rates.executors, slots):
            # the plan applied earlier still runs and a new one would not pay for a rebalance: show the one in effect
            change = why.removeprefix("not worth a rebalance: ")
            return AppLayout(_status(algorithm, rates, applied, now, now,
                                     f"{note}{running}; a new plan would change {change}"))
        return AppLayout(_status(algorithm, rates, plan, now, planned, note + why))

    def _applied(self, key: str, plan: traffic.TrafficPlan) -> None:
        with self._lock:
            if key in self.apps:
                self.apps[key].applied = plan

    def _drop_stale(self, current: str) -> None:
        """Forget the other apps not evaluated for FORGET_AFTER_S (call with the lock held)."""
        cutoff = self.clock() - FORGET_AFTER_S
        for key in [k for k, s in self.apps.items() if k != current and s.reading.at < cutoff]:
            self.apps.pop(key, None)


def _status(algorithm: str, rates: traffic.Traffic, plan, now: TrafficCut, planned: TrafficCut,
            message: str) -> dict[str, Any]:
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
