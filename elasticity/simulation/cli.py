"""`elastream simulate`: run one scenario or CSV trace under one policy, print the summary, write JSON/PNG."""
from __future__ import annotations

import json
from pathlib import Path

from elasticity.errors import InputError
from elasticity.simulation.runner import POLICIES, run
from elasticity.simulation.scenarios import from_trace, get_scenario

KEYS = ("slo_violation_s", "p99_latency_s", "executor_seconds", "rescales", "max_backlog")


def format_summary(summary: dict, scenario: str, policy: str) -> str:
    return "\n".join([
        f"scenario {scenario} · policy {policy}",
        f"  SLO violation   {summary['slo_violation_s']:.0f} s (p99 latency above the target)",
        f"  p99 latency     {summary['p99_latency_s']:.2f} s",
        f"  executor-seconds {summary['executor_seconds']:.0f}",
        f"  rescales        {summary['rescales']}",
        f"  max backlog     {summary['max_backlog']:.0f} records",
    ])


def format_references(scenario, result, seed, start: str) -> str:
    """The run against the oracle (same load, same start) and against the rescale-budget floor: the least a
    foresighted schedule with as many rescales could spend (elasticity/simulation/bounds.py)."""
    from elasticity.benchmark import rescale_floors

    oracle = run(scenario, "oracle", seed=seed, start=start)
    cost, o = result.summary["executor_seconds"], oracle.summary["executor_seconds"]
    k = int(result.summary["rescales"])
    floor = rescale_floors(scenario, oracle, {"run": k})["oracle_standard"]["run"]
    vs_floor = f"{cost / o / floor:.3f} ×" if floor != float("inf") else "– (no schedule without a rescale"
    vs_floor += (f" the least a foresighted schedule with {k} rescale{'s' if k != 1 else ''} could spend"
                 if floor != float("inf") else " meets the oracle's standard)")
    return "\n".join([f"  vs oracle       {cost / o:.3f} × its executor-seconds (it rescales freely at every step; "
                      f"SLO violation {oracle.summary['slo_violation_s']:.0f} s)",
                      f"  vs floor        {vs_floor}"])


def simulate_main(args) -> int:
    policy = getattr(args, "policy", None) or "elastream"
    if policy not in POLICIES:
        raise InputError(f"unknown policy {policy!r}; valid: {', '.join(POLICIES)}")
    if getattr(args, "trace", None):
        scenario = from_trace(args.trace)
    elif getattr(args, "scenario", None):
        scenario = get_scenario(args.scenario)
    else:
        raise InputError("give --scenario NAME or --trace FILE.csv")
    seed = getattr(args, "seed", None)  # None = the scenario's fixed seed; 0 is a seed like any other
    start = getattr(args, "start", None) or "as-deployed"
    result = run(scenario, policy, seed=seed, start=start)
    summary = {k: result.summary[k] for k in KEYS}
    print(format_summary(summary, scenario.name, policy))
    if policy != "oracle":
        print(format_references(scenario, result, seed, start))
    if getattr(args, "json", None):
        Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")
        print(f"  json            {args.json}")
    if getattr(args, "plot", None):
        from elasticity.simulation.plot import plot_timeline

        plot_timeline(result, args.plot)
        print(f"  timeline        {args.plot}")
    return 0
