"""`elastream simulate`: run one scenario or CSV trace under one policy, print the summary, write JSON/PNG."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from elasticity import json_report
from elasticity.autoscaler import GUARD_REASONS
from elasticity.errors import InputError
from elasticity.config import PolicyConfig
from elasticity.simulation.runner import POLICIES, UNDONE_WITHIN_S, most_rate_carried, reversals, run
from elasticity.simulation.scenarios import from_trace, get_scenario

KEYS = ("slo_violation_s", "p99_latency_s", "executor_seconds", "rescales", "rescales_undone", "max_backlog")
LONG_RUN_STEPS = 200_000  # from here (2.3 days at 1-s steps) a run takes minutes: say how far it is on stderr


class StderrProgress:
    """A run's progress(fraction) on stderr: on a terminal one line rewritten in place, in a log a line per 10 %
    (stdout stays the summary alone)."""

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label, self.stream = label, stream or sys.stderr
        self.tty = self.stream.isatty()
        self.shown = 0  # the last percent (terminal) or tenth (log) written

    def __call__(self, fraction: float) -> None:
        step = 100 if self.tty else 10
        done = int(fraction * step + 1e-9)  # (k + 1) / n can fall a hair short of an exact tenth
        if done <= self.shown:
            return
        self.shown = done
        if self.tty:
            self.stream.write(f"\r{self.label}: {done} %" + ("\n" if done == step else ""))
        else:
            self.stream.write(f"{self.label}: {done * 10} %\n")
        self.stream.flush()


def _progress(label: str, long_run: bool) -> StderrProgress | None:
    return StderrProgress(label) if long_run else None


def format_summary(summary: dict, scenario: str, policy: str, target_s: float | None = None) -> str:
    target = f"the {target_s:g} s target" if target_s is not None else "the target"
    return "\n".join([
        f"scenario {scenario} · policy {policy}",
        f"  SLO violation   {summary['slo_violation_s']:.0f} s (p99 latency above {target})",
        f"  p99 latency     {summary['p99_latency_s']:.2f} s",
        f"  executor-seconds {summary['executor_seconds']:.0f}",
        f"  rescales        {summary['rescales']} ({summary['rescales_undone']} reversing the one before within "
        f"{UNDONE_WITHIN_S / 60:.0f} min)",
        f"  max backlog     {summary['max_backlog']:.0f} records",
    ])


def format_decisions(result) -> str:
    """Each rescale the policy made, at its simulated time: the parallelism before and after (total and per stage),
    whether it reversed the one before within UNDONE_WITHIN_S, and the policy's reason; then the notable holds."""
    lines = [f"rescales ({len(result.stage_names)} stages: {', '.join(result.stage_names)}):"]
    made = [d for d in result.decisions if d.realize]
    totals = [(sum(d.current.values()), sum(d.targets.values())) for d in made]
    undone = reversals([d.timestamp for d in made], [(a > b) - (a < b) for b, a in totals])
    for k, (d, (before, after)) in enumerate(zip(made, totals)):
        mark = f" · undoes the one {(d.timestamp - made[k - 1].timestamp) / 60:.0f} min before" if undone[k] else ""
        per_stage = " ".join(f"{d.current[n]}→{d.targets[n]}" for n in result.stage_names if n in d.targets)
        lines.append(f"  {_clock(d.timestamp)}  {before}→{after} ({per_stage}){mark}\n"
                     f"            {d.reason}")
    if len(lines) == 1:
        lines.append("  none")
    return "\n".join(lines + format_holds(result.decisions))


# the guards whose holds --decisions lists: the job stays short (its bounds, a scale-up that did not help) or a wanted
# rescale is refused for the hour's budget. The delays a scale-in waits out, the stabilization window and a backlog's
# catch-up are the guards' routine, and would bury these.
NOTABLE_HOLDS = {"bounds": "at the bounds", "rate_limit": "rescale budget spent",
                 "ineffective_scale_up": "scale-up found ineffective", "policy": "held by the policy"}


def hold_spans(decisions) -> list[tuple[float, float, str, int, str]]:
    """(first time, last time, guard, evaluations, first reason) of each run of consecutive evaluations that one
    NOTABLE_HOLDS guard held."""
    spans: list[tuple[float, float, str, int, str]] = []
    previous = None  # the notable guard that held the evaluation before, if any
    for d in decisions:
        guard = d.guard if d.hold and d.guard in NOTABLE_HOLDS else None
        if guard is not None and guard == previous:
            first, _, _, n, reason = spans[-1]
            spans[-1] = (first, d.timestamp, guard, n + 1, reason)
        elif guard is not None:
            spans.append((d.timestamp, d.timestamp, guard, 1, d.reason))
        previous = guard
    return spans


def _clock(t: float) -> str:
    h, rem = divmod(int(t), 3600)
    return f"{h:02d}:{rem // 60:02d}:{rem % 60:02d}"


def format_holds(decisions) -> list[str]:
    """The lines listing hold_spans, under a heading; none when there are none."""
    spans = hold_spans(decisions)
    if not spans:
        return []
    lines = [f"holds ({', '.join(NOTABLE_HOLDS[g] for g in dict.fromkeys(g for _, _, g, _, _ in spans))}; "
             f"each run of evaluations held, with the first one's reason):"]
    for a, b, guard, n, reason in spans:
        when = _clock(a) if n == 1 else f"{_clock(a)}–{_clock(b)}"
        count = f"{n} evaluation{'s' if n != 1 else ''}"
        # with the condition reason the operator writes for it, so a listing reads as `kubectl describe` does
        lines.append(f"  {when}  {NOTABLE_HOLDS[guard]} ({GUARD_REASONS[guard]}, {count})\n            {reason}")
    return lines


def format_over_capacity(scenario, result, cfg) -> str:
    """A line when the run's load outgrows what the job carries with every stage at its bound (no policy keeps up
    then: the violation is the bounds', not the policy's), else ""."""
    most = most_rate_carried(scenario.job_spec(), cfg)
    peak = float(result.timeline.arrivals.max())
    if peak <= most:
        return ""
    hot = [s.name for s in scenario.job_spec().stages if s.hot_share > 0]
    bound = "the policy's bounds.max and the app's spark.executors.max or storm.maxParallelism"
    fix = (f"a hot key in {', '.join(hot)} caps it: a higher bound adds little" if hot
           else f"raise the bound that binds: {bound}")
    return (f"  over capacity   the load peaks at {peak:.0f} records/s; at max parallelism {cfg.max_parallelism} "
            f"(and its key groups) the job carries at most {most:.0f}: no policy can keep up ({fix})")


def format_references(scenario, result, seed, start: str, long_run: bool = False, config=None) -> str:
    """The run against the oracle (same load, same start) and against the rescale-budget floor: the least a
    foresighted schedule with as many rescales could spend (elasticity/simulation/bounds.py)."""
    from elasticity.benchmark import rescale_floors

    oracle = run(scenario, "oracle", config=config, seed=seed, start=start,
                 progress=_progress(f"the oracle on {scenario.name}", long_run))
    cost, o = result.summary["executor_seconds"], oracle.summary["executor_seconds"]
    k = int(result.summary["rescales"])
    if long_run:
        print(f"computing the rescale-budget floor for {k} rescales …", file=sys.stderr, flush=True)
    blocks: dict[str, int] = {}
    floor = rescale_floors(scenario, oracle, {"run": k}, cfg=config, blocks=blocks)["oracle_standard"]["run"]
    return "\n".join([f"  vs oracle       {cost / o:.3f} × its executor-seconds (it rescales freely at every step; "
                      f"SLO violation {oracle.summary['slo_violation_s']:.0f} s)",
                      f"  vs floor        {_vs_floor(cost / o, floor, k, blocks['oracle_standard'])}"])


def _vs_floor(ratio: float, floor: float, k: int, block: int) -> str:
    if floor == float("inf"):
        return "– (no schedule without a rescale meets the oracle's standard)"
    coarse = f" (a floor on {block}-interval blocks)" if block > 1 else ""
    return (f"{ratio / floor:.3f} × the least a foresighted schedule with {k} rescale{'s' if k != 1 else ''} "
            f"could spend{coarse}")


def simulate_main(args, config=None) -> int:
    """`config`: the PolicyConfig to run with (an ElasticityPolicy's settings), else the core's defaults."""
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
    long_run = round(scenario.duration_s / scenario.dt) >= LONG_RUN_STEPS
    result = run(scenario, policy, config=config, seed=seed, start=start,
                 keep_decisions=bool(getattr(args, "decisions", False)),
                 progress=_progress(f"simulating {scenario.name}", long_run))
    summary = {k: result.summary[k] for k in KEYS}
    print(format_summary(summary, scenario.name, policy, result.latency_target_s))
    over = format_over_capacity(scenario, result, config or PolicyConfig())
    if over:
        print(over)
    if policy != "oracle":
        print(format_references(scenario, result, seed, start, long_run, config))
    if getattr(args, "json", None):
        Path(args.json).write_text(json_report.dumps(summary))
        print(f"  json            {args.json}")
    if getattr(args, "plot", None):
        from elasticity.simulation.plot import plot_timeline

        plot_timeline(result, args.plot)
        print(f"  timeline        {args.plot}")
    if getattr(args, "decisions", False):
        print(format_decisions(result) if policy != "oracle" else
              "decisions: none to list; the oracle sets every step's parallelism with hindsight, it makes no decisions")
    return 0
