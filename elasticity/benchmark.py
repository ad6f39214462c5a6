"""`elastream bench elasticity`: every policy on every scenario with fixed seeds, side by side with the oracle.

Returns the markdown of the docs section (the CLI, elastream/commands/bench.py, writes it to docs/benchmarks.md;
this package never imports the operator's) and, with --json, writes the results as
{"scenarios": {SCENARIO: {POLICY: summary}}, "stress_scenarios": {...}, "criteria": {...}, "configs": {...},
 "sensitivity_right_sized": {"scenarios": {...}, "criteria": {...}},
 "rescale_budget_floors": {"main" | "stress" | "sensitivity": {SCENARIO: {"oracle_standard" | "full_utilization":
 {POLICY: floor at that policy's rescale count / the oracle's executor-seconds}}}}}.

The criteria are judged on the scenarios as deployed (every stage at 70 % utilization of the first rate, for
every policy). The same scenarios started right-sized (at the oracle's first-step parallelism, for every
policy) are run as a sensitivity check and reported separately; they are not part of the criteria.
"""
from __future__ import annotations

import datetime as _dt
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from elasticity import json_report
from elasticity.config import PolicyConfig
from elasticity.simulation.bounds import (RescaleBudgetBound, full_utilization_needs, interval_weights,
                                          oracle_needs)
from elasticity.simulation.job import SimulatedJob
from elasticity.simulation.oracle import Oracle
from elasticity.simulation.runner import POLICIES, SimResult, run
from elasticity.simulation.scenarios import Scenario, builtin, stress

COMMAND = "elastream bench elasticity"


def run_all(scenarios: dict[str, Scenario], policies=POLICIES, progress=None, start: str = "as-deployed",
            floors: dict | None = None, jobs: int = 1, budgets=None, within: float | None = None,
            config: PolicyConfig | None = None) -> dict[str, dict[str, dict]]:
    """{SCENARIO: {POLICY: summary}}; with `floors` (a dict) and the oracle among the policies, also fills
    floors[SCENARIO] with the rescale-budget floors (see `rescale_floors`) at each policy's rescale count and at
    the counts `budgets(results)` names ({LABEL: rescales}, from the scenario's {POLICY: summary}; optional), and
    with `within` the fewest rescales whose floor reaches that cost (`rescale_floors`).
    `jobs` > 1 runs that many scenarios at once in forked processes (each scenario's runs are independent; the
    results are the same). `config`: every policy's PolicyConfig (default: PolicyConfig())."""
    global _TASK
    _TASK = _Task(scenarios, tuple(policies), progress, start, floors is not None, budgets, within, config)
    if jobs > 1 and len(scenarios) > 1:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(min(jobs, len(scenarios))) as pool:
            done = dict(pool.imap_unordered(_run_scenario, list(scenarios)))
    else:
        done = dict(map(_run_scenario, scenarios))
    out = {name: done[name][0] for name in scenarios}
    if floors is not None:
        floors.update({name: done[name][1] for name in scenarios if done[name][1] is not None})
    return out


@dataclass(frozen=True)
class _Task:
    """What run_all's workers read (inherited by fork: scenarios hold closures that do not pickle)."""

    scenarios: dict
    policies: tuple
    progress: object
    start: str
    with_floors: bool
    budgets: object
    within: float | None
    config: PolicyConfig | None


_TASK: _Task | None = None


# scenarios that also run a variant of a policy, side by side: {SCENARIO: {LABEL: (POLICY, PolicyConfig knobs)}}
VARIANTS = {"hot-key": {"elastream, mean only": ("elastream", {"elastream_hot_key": False})}}


def _run_scenario(name: str) -> tuple[str, tuple[dict, dict | None]]:
    task = _TASK
    sc, results, oracle = task.scenarios[name], {}, None
    tag = "" if task.start == "as-deployed" else f" [{task.start}]"
    runs = [(pol, pol, task.config) for pol in task.policies]
    runs += [(label, pol, (task.config or PolicyConfig()).model_copy(update=knobs))
             for label, (pol, knobs) in VARIANTS.get(name, {}).items() if pol in task.policies]
    for label, pol, config in runs:
        t0 = time.perf_counter()
        res = run(sc, pol, config=config, start=task.start)
        results[label] = res.summary
        oracle = res if pol == "oracle" else oracle
        if task.progress:
            task.progress(f"{name:16s} {label:9s}{tag} {results[label]} ({time.perf_counter() - t0:.1f}s)")
    floor = None
    if task.with_floors and oracle is not None:
        counts = {pol: int(s["rescales"]) for pol, s in results.items() if pol != "oracle"}
        budgets = task.budgets(results) if task.budgets else {}
        floor = rescale_floors(sc, oracle, {**counts, **budgets}, cfg=task.config, within=task.within)
    return name, (results, floor)


def rescale_floors(sc: Scenario, oracle: SimResult, rescales: dict[str, int], cfg: PolicyConfig | None = None,
                   max_intervals: int | None = None, blocks: dict[str, int] | None = None,
                   within: float | None = None) -> dict[str, dict[str, float]]:
    """Per policy, the least executor-seconds (over the oracle's) of any schedule with perfect foresight and
    no more rescales than the policy made, from the same start, changing only at evaluation instants:
    "oracle_standard" gives every interval what the oracle gave it; "full_utilization" only carries its mean
    load at 100 % utilization. inf = impossible (no rescale, and the start falls short somewhere).
    max_intervals goes to RescaleBudgetBound (None: its MAX_INTERVALS); `blocks`, if given, receives per
    standard the block size the floor was computed on (1 = exact). With `within` (a cost over the oracle's), also
    "least_rescales_within": the fewest rescales whose floor at the oracle's standard is at most that (None when no
    count up to the largest in `rescales` reaches it)."""
    cfg = cfg or PolicyConfig()
    every = max(1, int(round(cfg.evaluation_interval_s / sc.dt)))
    tl = oracle.timeline
    weights = interval_weights(len(tl.t), every, sc.dt)
    start = np.array(oracle.initial_parallelism)
    top = max(rescales.values(), default=0)
    job = SimulatedJob(sc.job_spec(), tl.arrivals, dt=sc.dt)
    model = Oracle(job, cfg.latency_target_s, cfg.max_parallelism, cfg.min_parallelism)
    max_intervals = max_intervals or RescaleBudgetBound.MAX_INTERVALS
    std = RescaleBudgetBound(top, max_intervals).fit(oracle_needs(tl.parallelism, every), start, weights)
    full = RescaleBudgetBound(top, max_intervals).fit(full_utilization_needs(model, tl.arrivals, every), start,
                                                      weights)
    if blocks is not None:
        blocks.update(oracle_standard=std.block_, full_utilization=full.block_)
    o = oracle.summary["executor_seconds"]
    out = {"oracle_standard": {p: round(std.cost(k) / o, 4) for p, k in rescales.items()},
           "full_utilization": {p: round(full.cost(k) / o, 4) for p, k in rescales.items()}}
    if within is not None:
        out["least_rescales_within"] = next((k for k in range(top + 1) if std.cost(k) / o <= within), None)
    return out


def criteria(results: dict[str, dict[str, dict]], stationary: str = "stationary", floors: dict | None = None
             ) -> dict[str, dict]:
    """The issue's "done when" checks, per scenario; with `floors`, also whether they can be met at all: the
    least executor-seconds any schedule with no more rescales than ds2 could reach, over the oracle's."""
    out: dict[str, dict] = {}
    for name, r in results.items():
        e, d, o = r.get("elastream"), r.get("ds2"), r.get("oracle")
        if not (e and d and o):
            continue
        ratio = e["executor_seconds"] / o["executor_seconds"] if o["executor_seconds"] else float("inf")
        out[name] = {
            "slo_le_ds2": e["slo_violation_s"] <= d["slo_violation_s"],
            "executor_seconds_vs_oracle": round(ratio, 3),
            "executor_seconds_le_1_15_oracle": ratio <= 1.15,
            "rescales_le_ds2": e["rescales"] <= d["rescales"],
        }
        f = (floors or {}).get(name)
        if f and "ds2" in f["oracle_standard"]:
            out[name]["floor_at_ds2_rescales_vs_oracle"] = f["oracle_standard"]["ds2"]
            out[name]["floor_full_utilization_at_ds2_rescales_vs_oracle"] = f["full_utilization"]["ds2"]
            out[name]["reachable"] = f["oracle_standard"]["ds2"] <= 1.15
    if stationary in results and "elastream" in results[stationary]:
        out[stationary]["stationary_rescales_le_1"] = results[stationary]["elastream"]["rescales"] <= 1
    return out


def _ok(b: bool) -> str:
    return "yes" if b else "**no**"


def markdown(results: dict, stress_results: dict, crit: dict, scenarios: dict[str, Scenario], elapsed_s: float,
             sensitivity: dict | None = None, sensitivity_crit: dict | None = None, floors: dict | None = None
             ) -> str:
    """floors: {"main" | "stress" | "sensitivity": {SCENARIO: rescale_floors(...)}} (optional)."""
    floors = floors or {}
    today = _dt.date.today().isoformat()
    lines = [
        "## Elasticity — every policy against the oracle",
        "",
        f"Made by `{COMMAND}` on {today} ({elapsed_s:.0f} s). The simulated job is source → enrich → aggregate "
        "(400, 150, 100 records/s per instance; selectivity 1, 0.5, 0.1; 360 key groups each), rescaled in "
        "place (1 s pause, added instances warm up over 30 s), metrics every 30 s, latency target 5 s (p99); "
        "the `microbatch` scenario is a one-stage Spark-like job whose batches cost a fixed 0.5 s per 1 s "
        "trigger. " + config_markdown() + " Fixed seeds. The oracle knows the future and rescales for free at "
        "every step: the least parallelism that meets the target with its conservative latency budget "
        "(see docs/elasticity.md). `× oracle` is executor-seconds over the oracle's. Every scenario starts "
        "**as deployed**, the same for every policy: each stage sized for the first rate at 70 % utilization "
        "(a user's usual sizing, and ds2's/hpa's target). That start is a choice that suits ds2, which need "
        "not move on a steady load; the same scenarios started **right-sized** (at the oracle's own first-step "
        "parallelism) are reported below as a sensitivity check, not part of the criteria.",
        "",
        "`× floor` is a policy's executor-seconds over the **rescale-budget floor**: the least any schedule "
        "could cost with perfect foresight and no more rescales than that policy made, from the same start, "
        "changing only at evaluation instants, giving every interval what the oracle gave it "
        "(`elasticity/simulation/bounds.py`; 1.000 = the best possible use of that many rescales; – = no "
        "schedule without a rescale meets the oracle's standard). The criteria table says whether a scenario's "
        "criteria can be met at all: the floor at ds2's rescale count, over the oracle's cost — at the "
        "oracle's standard, and at 100 % utilization (the least capacity that merely keeps up). Above 1.15, "
        "no policy can have both executor-seconds ≤ 1.15 × the oracle's and no more rescales than ds2.",
        "",
    ]

    def crit_table(cr: dict):
        lines.extend(["| scenario | SLO ≤ ds2 | executor-s ≤ 1.15 × oracle | rescales ≤ ds2 | reachable at all? "
                      "(floor at ds2's rescales × oracle: oracle's standard / 100 %) | other |",
                      "|---|---|---|---|---|---|"])
        for name, c in cr.items():
            other = ""
            if "stationary_rescales_le_1" in c:
                other = f"30 min noisy stationary load: ≤ 1 rescale: {_ok(c['stationary_rescales_le_1'])}"
            reach = "–"
            if "reachable" in c:
                reach = (f"{'yes' if c['reachable'] else '**no**'} ({c['floor_at_ds2_rescales_vs_oracle']:.3f} / "
                         f"{c['floor_full_utilization_at_ds2_rescales_vs_oracle']:.3f})")
            lines.append(f"| {name} | {_ok(c['slo_le_ds2'])} | {_ok(c['executor_seconds_le_1_15_oracle'])} "
                         f"({c['executor_seconds_vs_oracle']:.3f}) | {_ok(c['rescales_le_ds2'])} | {reach} | {other} |")
        lines.append("")

    def table(res: dict, title: str, fl: dict):
        for name, r in res.items():
            sc = scenarios.get(name)
            floor = fl.get(name, {}).get("oracle_standard", {})
            lines.append(f"### {title}{name} — {sc.description if sc else ''}")
            lines.append("")
            lines.append("| policy | SLO violation (s) | p99 latency (s) | executor-s | × oracle | × floor | rescales "
                         "| max backlog |")
            lines.append("|---|---:|---:|---:|---:|---:|---:|---:|")
            o = r.get("oracle", {}).get("executor_seconds") or 0
            for pol, s in r.items():
                ratio = f"{s['executor_seconds'] / o:.3f}" if o else "–"
                f = floor.get(pol)
                vs_floor = f"{s['executor_seconds'] / o / f:.3f}" if o and f and f != float("inf") else "–"
                lines.append(f"| {pol} | {s['slo_violation_s']:.0f} | {s['p99_latency_s']:.2f} | "
                             f"{s['executor_seconds']:.0f} | {ratio} | {vs_floor} | {s['rescales']} | "
                             f"{s['max_backlog']:.0f} |")
            lines.append("")

    table(results, "", floors.get("main", {}))
    lines += [
        "### The issue's criteria (elastream against ds2 and the oracle; scenarios as deployed)",
        "",
    ]
    crit_table(crit)
    lines += verdict(crit)
    if stress_results:
        lines += ["### Stress scenarios (loads that change faster than the default guards let anyone follow)", ""]
        table(stress_results, "stress: ", floors.get("stress", {}))
        lines += ["`elastream, mean only`: elastream with `elastream_hot_key: false`, planning from the mean busy "
                  "fraction as every policy did before it read the busiest instance's (docs/elasticity.md, item 22).",
                  ""]
    if sensitivity:
        lines += [
            "### Sensitivity: the same scenarios started right-sized (not part of the criteria)",
            "",
            "Every policy (oracle and static included) starts at the parallelism the oracle picks for the first "
            "step: the least that meets the latency target for the next seconds, with no headroom for the "
            "load's noise or for rescale pauses, which the free-rescaling oracle does not need. A causal policy "
            "must then first scale *out* on a noisy load; ds2 moves to its 70 % target.",
            "",
        ]
        table(sensitivity, "right-sized: ", floors.get("sensitivity", {}))
        if sensitivity_crit:
            lines += ["The criteria's checks on this start, for information:", ""]
            crit_table(sensitivity_crit)
    return "\n".join(lines)


def verdict(crit: dict) -> list[str]:
    """One paragraph: where the criteria can be met at all, and where elastream meets them."""
    judged = {n: c for n, c in crit.items() if "reachable" in c}
    if not judged:
        return []
    met = lambda c: c["slo_le_ds2"] and c["executor_seconds_le_1_15_oracle"] and c["rescales_le_ds2"]  # noqa: E731
    reachable = [n for n, c in judged.items() if c["reachable"]]
    unreachable = [n for n in judged if n not in reachable]
    hard = [n for n in unreachable if judged[n]["floor_full_utilization_at_ds2_rescales_vs_oracle"] > 1.15]
    all_met = [n for n, c in judged.items() if met(c)]
    text = (f"Criteria met in full by elastream: {', '.join(all_met) or 'none'}. Reachable at all (the floor at "
            f"ds2's rescale count ≤ 1.15 × oracle): {', '.join(reachable) or 'none'}; unreachable by any policy "
            f"that serves as the oracle does: {', '.join(unreachable) or 'none'}")
    if hard:
        text += (" — of which unreachable even by a schedule that merely keeps up at 100 % utilization: "
                 + ", ".join(hard))
    return [text + ".", ""]


def configs() -> dict[str, dict]:
    """The configuration each policy runs with in the benchmark: the same PolicyConfig() for every policy —
    no field set, so each guard is at its default, and a policy's own default applies only where the
    config leaves a field unset (elastream's confident scale-in delay while `scale_down_delay_s` is unset)."""
    from elasticity.config import PolicyConfig

    cfg = PolicyConfig()
    return {pol: cfg.model_copy(update={"algorithm": pol if pol != "oracle" else "static"}).model_dump()
            for pol in POLICIES}


def config_markdown() -> str:
    cfg = configs()["elastream"]
    guards = (f"stabilization {cfg['stabilization_window_s']:.0f} s, scale-down delay unset (600 s; elastream "
              f"{cfg['elastream_confident_scale_down_delay_s']:.0f} s for a scale-in its forecast is confident in), "
              f"at most {cfg['max_rescales_per_hour']} rescales per hour, evaluation every "
              f"{cfg['evaluation_interval_s']:.0f} s, latency target {cfg['latency_target_s']:g} s (p99)")
    return ("Every policy runs with the same `PolicyConfig()` (nothing set; one config for all scenarios): "
            f"{guards}; ds2/hpa/mestream: target utilization {cfg['target_utilization']:g}; elastream: ceiling "
            f"{cfg['elastream_max_utilization']:g} (adaptive), noise headroom z = {cfg['elastream_noise_z']:g}, "
            f"burst coverage {cfg['elastream_burst_coverage']:g}, hysteresis {cfg['elastream_hysteresis']:g}, "
            f"min saving {cfg['elastream_min_saving']:g}, trend horizon × {cfg['elastream_trend_horizon_factor']:g}, "
            "capacity regression on. A scale-down delay set by the user applies to every policy alike.")


def run_benchmark(progress=None, jobs: int = 1) -> tuple[dict, dict, dict, str, dict, dict]:
    """Run everything; returns (results, stress results, criteria, markdown of the docs section,
    {"scenarios": right-sized sensitivity results, "criteria": its checks}, rescale-budget floors)."""
    t0 = time.perf_counter()
    scenarios = builtin()
    extra = stress()
    floors: dict[str, dict] = {"main": {}, "stress": {}, "sensitivity": {}}
    results = run_all(scenarios, progress=progress, floors=floors["main"], jobs=jobs)
    stress_results = run_all(extra, progress=progress, floors=floors["stress"], jobs=jobs)
    sens = run_all(scenarios, progress=progress, start="right-sized", floors=floors["sensitivity"], jobs=jobs)
    crit = criteria(results, floors=floors["main"])
    sens_crit = criteria(sens, floors=floors["sensitivity"])
    elapsed = time.perf_counter() - t0
    md = markdown(results, stress_results, crit, {**scenarios, **extra}, elapsed, sens, sens_crit, floors)
    return results, stress_results, crit, md, {"scenarios": sens, "criteria": sens_crit}, floors


def bench_main(args) -> int:
    """Print the tables and write --json; returns the markdown for the caller to put in the docs (the CLI
    does that: the core never imports the operator's packages)."""
    say = lambda m: print(m, flush=True)  # noqa: E731
    results, stress_results, crit, md, sens, floors = run_benchmark(progress=say, jobs=getattr(args, "jobs", 1))
    print()
    print(md)
    if getattr(args, "json", None):
        Path(args.json).write_text(json_report.dumps({"scenarios": results, "stress_scenarios": stress_results,
                                                      "criteria": crit, "configs": configs(),
                                                      "sensitivity_right_sized": sens,
                                                      "rescale_budget_floors": floors}))
    args.markdown = md
    return 0
