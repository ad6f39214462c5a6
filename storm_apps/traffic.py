"""Tuple traffic between a topology's executors, measured from Nimbus's per-executor statistics, and the plan that
ETW/WTN (elasticity.placement.traffic) makes of it, in the form elastream's PlanScheduler reads.

Storm counts, per receiving executor, the tuples it executed from each (component, stream), and per sending
executor the tuples it emitted on each stream; not who sent to whom. So the rate from sender i to receiver d is
d's count from i's component and stream, times i's share of that component's emits on that stream. That is exact
when every sender spreads its tuples over the receivers alike, as shuffle and fields groupings do.

Counts are ":all-time" since a worker started; a rate is the difference of two snapshots over the time between
them (a counter that went back, after a worker restart, counts from zero).
"""
from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import dataclass, field

from elasticity.placement.traffic import TrafficPlacer, TrafficPlan, cut_rate

ALL_TIME = ":all-time"
PLAN_KEY = "elastream.placement.plan"  # the topology conf key PlanScheduler reads
Tasks = tuple[int, int]  # an executor: its first and last task (Storm's own executor id)


@dataclass(frozen=True)
class Executor:
    component: str
    host: str
    port: int


@dataclass
class Snapshot:
    at: float
    executors: dict[Tasks, Executor]
    emitted: dict[Tasks, dict[str, int]] = field(default_factory=dict)  # stream -> count
    executed: dict[Tasks, dict[tuple[str, str], int]] = field(default_factory=dict)  # (component, stream) -> count
    busy_ms: dict[Tasks, float] = field(default_factory=dict)  # executed x execute latency
    acked: int = 0
    complete_ms: float = 0.0  # acked x complete latency, summed over spout executors


@dataclass(frozen=True)
class Traffic:
    window_s: float
    executors: dict[Tasks, Executor]
    rates: dict[tuple[Tasks, Tasks], float]  # tuples/s, sender -> receiver
    loads: dict[Tasks, float]  # busy fraction (executing) per executor
    complete_latency_ms: float | None  # spout tuples acked in the window, their mean complete latency


def snapshot(info, at: float | None = None) -> Snapshot:
    """A Snapshot of a TopologyInfo (storm_apps.nimbus): the scheduled executors (not __system) and their counts."""
    snap = Snapshot(time.monotonic() if at is None else at, {})
    for e in info.executors or []:
        tasks = (e.executor_info.task_start, e.executor_info.task_end)
        if tasks[0] < 0 or e.component_id is None or e.component_id == "__system":
            continue
        snap.executors[tasks] = Executor(e.component_id, e.host, int(e.port))
        stats = e.stats
        if stats is None:
            continue
        snap.emitted[tasks] = dict((stats.emitted or {}).get(ALL_TIME) or {})
        specific = stats.specific
        if specific is not None and specific.bolt is not None:
            executed = (specific.bolt.executed or {}).get(ALL_TIME) or {}
            latency = (specific.bolt.execute_ms_avg or {}).get(ALL_TIME) or {}
            snap.executed[tasks] = {(s.componentId, s.streamId): n for s, n in executed.items()}
            snap.busy_ms[tasks] = sum(n * (latency.get(s) or 0.0) for s, n in executed.items())
        elif specific is not None and specific.spout is not None:
            acked = (specific.spout.acked or {}).get(ALL_TIME) or {}
            latency = (specific.spout.complete_ms_avg or {}).get(ALL_TIME) or {}
            snap.acked += sum(acked.values())
            snap.complete_ms += sum(n * (latency.get(s) or 0.0) for s, n in acked.items())
    return snap


def counter_delta(after: float, before: float) -> float:
    return after - before if after >= before else after  # a restarted worker counts from zero


def traffic(before: Snapshot, after: Snapshot) -> Traffic:
    """The rates between two snapshots of the same topology layout."""
    window = max(after.at - before.at, 1e-9)
    by_component: dict[str, list[Tasks]] = defaultdict(list)
    for tasks, ex in after.executors.items():
        by_component[ex.component].append(tasks)
    emitted = {t: {s: counter_delta(n, before.emitted.get(t, {}).get(s, 0)) for s, n in streams.items()}
               for t, streams in after.emitted.items()}
    rates: dict[tuple[Tasks, Tasks], float] = defaultdict(float)
    for receiver, counts in after.executed.items():
        for (component, stream), n in counts.items():
            got = counter_delta(n, before.executed.get(receiver, {}).get((component, stream), 0))
            senders = by_component.get(component, [])
            if got <= 0 or not senders:
                continue
            sent = {s: emitted.get(s, {}).get(stream, 0) for s in senders}
            total = sum(sent.values())
            for s in senders:
                share = sent[s] / total if total > 0 else 1 / len(senders)
                if share > 0:
                    rates[(s, receiver)] += got * share / window
    loads = {t: max(0.0, counter_delta(after.busy_ms.get(t, 0.0), before.busy_ms.get(t, 0.0))) / 1000 / window
             for t in after.executors}
    acked = counter_delta(after.acked, before.acked)
    latency = counter_delta(after.complete_ms, before.complete_ms) / acked if acked > 0 else None
    return Traffic(window, dict(after.executors), dict(rates), loads, latency)


def measure(client, topology_id: str, window_s: float) -> Traffic:
    """Rates over the next `window_s` seconds (two getTopologyInfo calls)."""
    before = snapshot(client.info_by_id(topology_id))
    time.sleep(window_s)
    return traffic(before, snapshot(client.info_by_id(topology_id)))


def placement_of(measured: Traffic, node_of_slot) -> tuple[dict[Tasks, tuple[str, int]], dict[Tasks, str]]:
    """The current layout: executor -> worker (host, port) and executor -> node (`node_of_slot(host, port)`)."""
    worker = {t: (e.host, e.port) for t, e in measured.executors.items()}
    return worker, {t: node_of_slot(*w) for t, w in worker.items()}


def summary(measured: Traffic, node_of_slot) -> dict:
    """Inter-worker and inter-node tuples/s of the current layout, the total, and the complete latency."""
    worker, node = placement_of(measured, node_of_slot)
    return {"tuples_per_s": round(sum(measured.rates.values()), 1),
            "inter_worker_per_s": round(cut_rate(measured.rates, worker), 1),
            "inter_node_per_s": round(cut_rate(measured.rates, node), 1),
            "workers": len(set(worker.values())), "nodes": len(set(node.values())),
            "complete_latency_ms": None if measured.complete_latency_ms is None
            else round(measured.complete_latency_ms, 2)}


def plan(measured: Traffic, workers: int, free_slots: dict[str, int], balance: float = 0.25) -> TrafficPlan:
    """ETW/WTN over the measured rates and loads: `workers` workers on nodes with `free_slots` (node -> slots,
    counting the slots this topology holds now: a rebalance frees them)."""
    return TrafficPlacer(workers, balance).plan(measured.loads, measured.rates, free_slots)


def plan_conf(traffic_plan: TrafficPlan) -> dict:
    """The topology conf that hands `traffic_plan` to PlanScheduler (a rebalance's topology_conf_overrides)."""
    return {PLAN_KEY: {"workers": [
        {"node": traffic_plan.node_of_worker[w], "executors": [list(t) for t in sorted(members)]}
        for w, members in sorted(traffic_plan.workers().items())]}}


def default_conf() -> dict:
    """The conf that takes a plan back (an empty plan): Storm's default scheduler places the topology at its next
    rebalance."""
    return {PLAN_KEY: {"workers": []}}


def follows(traffic_plan: TrafficPlan, executors: dict[Tasks, Executor], node_of_slot) -> bool:
    """Whether the live layout is the plan: the same executors share a worker, and each worker is on its node."""
    planned = {frozenset(m): traffic_plan.node_of_worker[w] for w, m in traffic_plan.workers().items()}
    live: dict[tuple[str, int], set[Tasks]] = defaultdict(set)
    for t, e in executors.items():
        live[(e.host, e.port)].add(t)
    return {frozenset(m): node_of_slot(*w) for w, m in live.items()} == planned


def apply(nimbus, name: str, traffic_plan: TrafficPlan | None, workers: int | None = None) -> float:
    """Rebalance with `traffic_plan` (None: hand the topology back to the default scheduler). Returns when the call
    was made (monotonic seconds). `workers`: the topology's new worker count, when the plan has another (it must
    match: Storm's default scheduler re-spreads a topology that holds fewer workers than it asked for)."""
    conf = default_conf() if traffic_plan is None else plan_conf(traffic_plan)
    t0 = time.monotonic()
    nimbus.rebalance(name, executors={}, workers=workers, wait_s=0, conf_overrides=json.dumps(conf))
    return t0


def wait_laid_out(nimbus, name: str, topology_id: str, traffic_plan: TrafficPlan | None, node_of_slot, t0: float,
                  timeout_s: float = 120.0) -> float:
    """Seconds from t0 until Nimbus shows the topology ACTIVE and laid out as planned; TimeoutError otherwise."""
    time.sleep(2.0)  # Nimbus shows the old layout until the rebalance's scheduling round
    while time.monotonic() - t0 < timeout_s:
        info = nimbus.info_by_id(topology_id)
        if info.status == "ACTIVE" and (traffic_plan is None or follows(traffic_plan, snapshot(info).executors,
                                                                         node_of_slot)):
            return time.monotonic() - t0
        time.sleep(1.0)
    raise TimeoutError(f"topology {name} did not take its {'plan' if traffic_plan else 'default layout'} "
                       f"in {timeout_s:.0f}s")


def realize(nimbus, name: str, topology_id: str, traffic_plan: TrafficPlan | None, node_of_slot,
            workers: int | None = None, timeout_s: float = 120.0) -> float:
    """apply() then wait_laid_out(): the seconds until Nimbus runs the layout."""
    t0 = apply(nimbus, name, traffic_plan, workers)
    return wait_laid_out(nimbus, name, topology_id, traffic_plan, node_of_slot, t0, timeout_s)
