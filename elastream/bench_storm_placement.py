"""`elastream bench storm-placement`: elastream's ETW/WTN plan, applied by its PlanScheduler inside Nimbus, against
Storm's default scheduler, on a real local Storm cluster with several supervisors.

The `pipeline` topology runs at a constant rate with more workers than one supervisor's slots. Each round measures
the default scheduler's layout, then computes ETW/WTN from the tuple rates just measured, rebalances with the plan
(topology_conf_overrides) and measures again; the next round first hands the topology back to the default
scheduler. Per layout: tuples/s between workers and between nodes (supervisors), and the spouts' complete latency.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from elasticity import json_report

# after a submit or rebalance: workers restart, stats come ~20 s later, then a catch-up burst of 2-5x the rate
# (notes/storm-cluster.md); measured here: 30-40 s without stats, then 20-60 s of catch-up. A layout is measured
# once the source has no backlog and under a second of records in flight, three checks in a row.
MIN_SETTLE_S, MAX_SETTLE_S = 30.0, 300.0
APP = "pipeline"
PARALLELISM = {"parse": 2, "enrich": 4, "aggregate": 2}
SCHEDULERS = ("default", "elastream")


def run(rounds: int, rate: float, window_s: float, workers: int, supervisors: int, slots: int,
        workdir: Path) -> dict:
    from storm_apps.cluster import LocalStormCluster
    from storm_apps.nimbus import NimbusClient
    from storm_apps.topology import APPS, submit
    from storm_apps.traffic import realize

    name, state_dir = "bench-placement", workdir / "state"
    with LocalStormCluster(supervisors=supervisors, slots_per_supervisor=slots, base_dir=workdir / "storm",
                           plan_scheduler=True) as cluster:
        nimbus = NimbusClient(cluster.nimbus_host, cluster.nimbus_port)
        submit(cluster.storm_home, cluster.nimbus_host, cluster.nimbus_port, name=name, app=APP,
               parallelism=PARALLELISM, max_parallelism=APPS[APP].default_max_parallelism, workers=workers,
               generator={"profile": "constant", "rate": rate}, state_dir=state_dir)
        topology_id = _wait_id(nimbus, name)
        node_of_port = cluster.node_of_port()
        runs = []
        for i in range(rounds):
            if i:
                realize(nimbus, name, topology_id, None, lambda h, p: node_of_port[p])
            runs.append(measure_layout(nimbus, topology_id, "default", i, window_s, node_of_port, state_dir, rate))
            plan = plan_from(runs[-1].pop("traffic"), workers, slots, node_of_port)
            realize(nimbus, name, topology_id, plan, lambda h, p: node_of_port[p])
            runs.append(measure_layout(nimbus, topology_id, "elastream", i, window_s, node_of_port, state_dir, rate))
            runs[-1].pop("traffic")
        nimbus.kill(name)
    return {"rate": rate, "rounds": rounds, "window_s": window_s, "workers": workers,
            "supervisors": supervisors, "slots_per_supervisor": slots, "parallelism": PARALLELISM, "runs": runs,
            "summary": summarize(runs)}


def plan_from(measured, workers: int, slots: int, node_of_port: dict[int, str]):
    from storm_apps.traffic import plan

    nodes = dict.fromkeys(sorted(set(node_of_port.values())), slots)  # a rebalance frees the topology's slots
    return plan(measured, workers, nodes)


def measure_layout(nimbus, topology_id: str, scheduler: str, round_: int, window_s: float,
                   node_of_port: dict[int, str], state_dir: Path, rate: float) -> dict:
    from storm_apps.traffic import measure, summary

    settle_s = settle(state_dir, rate)
    for _ in range(3):  # a worker that restarted late may not have reported stats yet: nothing counted
        measured = measure(nimbus, topology_id, window_s)
        if measured.rates:
            break
    else:
        raise RuntimeError(f"no tuples counted in 3 windows of {window_s:g}s after the {scheduler} layout")
    row = {"scheduler": scheduler, "round": round_, "settle_s": round(settle_s, 1),
           **summary(measured, lambda h, p: node_of_port[p]), "traffic": measured}
    print(f"  round {round_ + 1} {scheduler:<9} {row['tuples_per_s']:7.1f} tuples/s, between workers "
          f"{row['inter_worker_per_s']:7.1f}, between nodes {row['inter_node_per_s']:7.1f}, complete latency "
          f"{row['complete_latency_ms']} ms", flush=True)
    return row


def settle(state_dir: Path, rate: float, poll_s: float = 2.0) -> float:
    """Seconds until the topology has caught up (see MIN_SETTLE_S); TimeoutError after MAX_SETTLE_S."""
    from storm_apps.source import read_source_state

    t0 = time.monotonic()
    time.sleep(MIN_SETTLE_S)
    calm, state = 0, None
    while time.monotonic() - t0 < MAX_SETTLE_S:
        state = read_source_state(state_dir) or {}
        calm = calm + 1 if state.get("backlog", 1) <= 0 and state.get("pending", rate) < rate else 0
        if calm >= 3:
            return time.monotonic() - t0
        time.sleep(poll_s)
    raise TimeoutError(f"the topology did not catch up within {MAX_SETTLE_S:.0f}s: source state {state}")


def summarize(runs: list[dict]) -> dict:
    out = {}
    for scheduler in SCHEDULERS:
        rows = [r for r in runs if r["scheduler"] == scheduler]
        latencies = [r["complete_latency_ms"] for r in rows if r["complete_latency_ms"] is not None]
        out[scheduler] = {
            "tuples_per_s": round(statistics.mean(r["tuples_per_s"] for r in rows), 1),
            "inter_worker_per_s": round(statistics.mean(r["inter_worker_per_s"] for r in rows), 1),
            "inter_node_per_s": round(statistics.mean(r["inter_node_per_s"] for r in rows), 1),
            "complete_latency_ms": round(statistics.mean(latencies), 2) if latencies else None,
            "nodes": max(r["nodes"] for r in rows)}
    return out


def _wait_id(nimbus, name: str, timeout_s: float = 120.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        topology_id = nimbus.topology_id(name)
        if topology_id:
            return topology_id
        time.sleep(1.0)
    raise TimeoutError(f"topology {name} not on Nimbus after {timeout_s:.0f}s")


def table(result: dict) -> str:
    s = result["summary"]
    d, e = s["default"], s["elastream"]

    def ratio(key):
        return f"{e[key] / d[key]:.2f}" if d[key] and e[key] is not None else "–"

    lines = ["| scheduler | tuples/s | between workers (tuples/s) | between nodes (tuples/s) | nodes used | "
             "complete latency (ms) |", "|---|---:|---:|---:|---:|---:|"]
    for label, row in (("Storm default (even)", d), ("elastream ETW/WTN", e)):
        lines.append(f"| {label} | {row['tuples_per_s']:.1f} | {row['inter_worker_per_s']:.1f} | "
                     f"{row['inter_node_per_s']:.1f} | {row['nodes']} | {row['complete_latency_ms']} |")
    lines.append(f"| **elastream / default** | {ratio('tuples_per_s')} | {ratio('inter_worker_per_s')} | "
                 f"{ratio('inter_node_per_s')} | – | {ratio('complete_latency_ms')} |")
    return "\n".join(lines)


def bench_main(args: argparse.Namespace) -> int:
    from elastream.errors import UserError

    if args.rounds < 1:
        raise UserError(f"--rounds must be at least 1, not {args.rounds}")
    if not 0 < args.rate <= 500:
        raise UserError(f"--rate must be above 0 and at most 500 records/s (2 cores), not {args.rate:g}")
    if args.window < 10:
        raise UserError(f"--window must be at least 10 s (Storm's stats come every 10 s), not {args.window:g}")
    if not 2 <= args.workers <= args.supervisors * args.slots:
        raise UserError(f"--workers must be from 2 to supervisors x slots ({args.supervisors * args.slots}), "
                        f"not {args.workers}")
    with tempfile.TemporaryDirectory(prefix="elastream-bench-storm-placement-") as tmp:
        result = run(args.rounds, args.rate, args.window, args.workers, args.supervisors, args.slots, Path(tmp))
    text = table(result)
    print(text)
    if args.json:
        Path(args.json).write_text(json_report.dumps(result))
    command = (f"elastream bench storm-placement --rounds {args.rounds} --rate {args.rate:g} --window "
               f"{args.window:g} --workers {args.workers} --supervisors {args.supervisors} --slots {args.slots}")
    args.docs_markdown = (
        "## Storm placement — elastream's ETW/WTN scheduler against Storm's default\n\n"
        f"Command: `{command}` — a local Storm 2.8.3 cluster ({args.supervisors} supervisors × {args.slots} slots, "
        f"Nimbus with `storm.scheduler: {_scheduler_class()}`), the `pipeline` topology (executors "
        f"{PARALLELISM}, {args.workers} workers) at {args.rate:g} records/s. Each round measures the default "
        f"scheduler's layout for {args.window:g} s, then rebalances with the ETW/WTN plan computed from those rates "
        f"and measures it; means over {args.rounds} rounds. Rates between executors are estimated from Storm's "
        f"per-executor counts (storm_apps/traffic.py); supervisors share one machine, so 'between nodes' is "
        f"loopback traffic between supervisors.\n\n{text}\n")
    return 0


def _scheduler_class() -> str:
    from storm_apps.distribution import SCHEDULER_CLASS

    return SCHEDULER_CLASS
