"""`elastream bench storm-rebalance`: what a real Nimbus rebalance costs, measured on a local Storm cluster, beside
the simulator's `storm-rebalance` scenario that plans around it.

The pipeline topology runs at a constant rate; the bench rebalances it again and again — executors of one bolt out
and back, then workers out and back — and for each rebalance measures:
- layout: from the Thrift call until Nimbus shows the new layout, ACTIVE;
- gap: the longest time within GAP_WINDOW_S after the call during which the sink received nothing (the stall);
- replayed: records the source emitted again (tuples lost in flight when a worker restarted).
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from elasticity import json_report

GAP_WINDOW_S = 60.0
SETTLE_S = 30.0
MOVES = (("executors out", {"enrich": 2}, 1), ("executors in", {"enrich": 1}, 1),
         ("workers out", {}, 2), ("workers in", {}, 1))


def sink_bytes(state_dir: Path) -> int:
    return sum(p.stat().st_size for p in state_dir.glob("sink-*.txt"))


def longest_gap(t0: float, growth_times: list[float], until: float) -> float:
    """The longest interval without sink growth in [t0, until]: from t0 to the first growth, between growths, and
    from the last growth to `until`."""
    points = [t0, *[t for t in growth_times if t0 < t <= until], until]
    return max(b - a for a, b in zip(points, points[1:]))


def measure(nimbus, topology: str, state_dir: Path, label: str, executors: dict[str, int], workers: int,
            poll_s: float = 0.1) -> dict:
    from storm_apps.source import read_source_state

    replayed_before = (read_source_state(state_dir) or {}).get("replayed", 0)
    last, growth = sink_bytes(state_dir), []
    t0 = time.monotonic()
    nimbus.rebalance(topology, executors=executors, workers=workers, wait_s=0)
    layout_s = nimbus.wait_rebalanced(topology, executors=executors, workers=workers, timeout_s=120)
    while time.monotonic() - t0 < GAP_WINDOW_S:
        now_bytes = sink_bytes(state_dir)
        if now_bytes > last:
            growth.append(time.monotonic())
            last = now_bytes
        time.sleep(poll_s)
    state = read_source_state(state_dir) or {}
    return {"move": label, "executors": executors, "workers": workers, "layout_s": round(layout_s, 2),
            "gap_s": round(longest_gap(t0, growth, t0 + GAP_WINDOW_S), 2),
            "replayed": state.get("replayed", 0) - replayed_before}


def run(repeats: int, rate: float, workdir: Path) -> dict:
    from storm_apps.cluster import LocalStormCluster
    from storm_apps.nimbus import NimbusClient
    from storm_apps.topology import APPS, submit

    name, state_dir = "bench-rebalance", workdir / "state"
    with LocalStormCluster(supervisors=2, slots_per_supervisor=2, base_dir=workdir / "storm") as cluster:
        nimbus = NimbusClient(cluster.nimbus_host, cluster.nimbus_port)
        submit(cluster.storm_home, cluster.nimbus_host, cluster.nimbus_port, name=name, app="pipeline",
               parallelism={}, max_parallelism=APPS["pipeline"].default_max_parallelism, workers=1,
               generator={"profile": "constant", "rate": rate}, state_dir=state_dir)
        _wait_flowing(state_dir)
        runs = []
        for i in range(repeats):
            for label, executors, workers in MOVES:
                time.sleep(SETTLE_S)
                runs.append(measure(nimbus, name, state_dir, label, executors, workers))
                print(f"  {i + 1}/{repeats} {label:<14} layout {runs[-1]['layout_s']:5.2f}s  gap "
                      f"{runs[-1]['gap_s']:5.2f}s  replayed {runs[-1]['replayed']}", flush=True)
        nimbus.kill(name)
    return {"rate": rate, "repeats": repeats, "runs": runs}


def _wait_flowing(state_dir: Path, timeout_s: float = 180.0) -> None:
    deadline, seen = time.monotonic() + timeout_s, 0
    while time.monotonic() < deadline:
        size = sink_bytes(state_dir)
        if size > 0 and seen > 0 and size > seen:
            return
        seen = size
        time.sleep(2.0)
    raise TimeoutError(f"the sink received nothing within {timeout_s:.0f}s")


def table(result: dict, simulated_pause_s: float) -> str:
    lines = ["| rebalance | runs | layout median (s) | gap median (s) | gap max (s) | replayed median |",
             "|---|---:|---:|---:|---:|---:|"]
    for label, _, _ in MOVES:
        rs = [r for r in result["runs"] if r["move"] == label]
        if rs:
            lines.append(f"| {label} | {len(rs)} | {statistics.median(r['layout_s'] for r in rs):.2f} | "
                         f"{statistics.median(r['gap_s'] for r in rs):.1f} | {max(r['gap_s'] for r in rs):.1f} | "
                         f"{statistics.median(r['replayed'] for r in rs):.0f} |")
    gaps = [r["gap_s"] for r in result["runs"]]
    lines.append(f"| **all, measured** | {len(gaps)} | – | {statistics.median(gaps):.1f} | {max(gaps):.1f} | – |")
    lines.append(f"| simulator `storm-rebalance` (pause per rescale) | – | – | {simulated_pause_s:.1f} | – | – |")
    return "\n".join(lines)


def bench_main(args: argparse.Namespace) -> int:
    from elasticity.simulation.scenarios import get_scenario

    from elastream.errors import UserError

    if args.repeats < 1:
        raise UserError(f"--repeats must be at least 1, not {args.repeats}")
    if not 0 < args.rate <= 1000:
        raise UserError(f"--rate must be above 0 and at most 1000 records/s (2 cores), not {args.rate:g}")
    with tempfile.TemporaryDirectory(prefix="elastream-bench-storm-") as tmp:
        result = run(args.repeats, args.rate, Path(tmp))
    pause = get_scenario("storm-rebalance").job.rescale_pause_s
    text = table(result, pause)
    print(text)
    if args.json:
        Path(args.json).write_text(json_report.dumps(result))
    args.docs_markdown = (
        "## Storm rebalance — what a real Nimbus rebalance costs\n\n"
        f"Command: `elastream bench storm-rebalance --repeats {args.repeats} --rate {args.rate:g}` — a local Storm "
        f"2.8.3 cluster (ZooKeeper, Nimbus, 2 supervisors × 2 slots), the `pipeline` topology at {args.rate:g} "
        f"records/s, every rebalance through Nimbus Thrift with wait_secs 0; gap = the longest time the sink "
        f"received nothing within {GAP_WINDOW_S:.0f} s of the call.\n\n{text}\n")
    return 0
