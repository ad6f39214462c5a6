"""`elastream bench elasticity --suite broad`: every policy on parameterised load families over many seeds
(elasticity.simulation.families), plus the built-in scenarios, judged per family and in aggregate.

Per family and policy: total SLO-violation seconds, executor-seconds over the oracle's and over the rescale-budget
floor's (sums over the family's seeds), and total rescales; and whether elastream Pareto-dominates ds2 there (no
worse on SLO violation, executor-seconds and rescales). In aggregate: elastream's rescales over ds2's, the median
run's executor-seconds over the oracle's, and whether those two criteria can be met together: the median run's
rescale-budget floor at 0.6 × ds2's rescales, and the fewest rescales with which perfect foresight lets the median
run reach 1.25 × the oracle. The JSON keeps the shape of the main benchmark's:
{"scenarios": {NAME: {POLICY: summary}}, ...} with one NAME per family and seed.
"""
from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from elasticity import json_report
from elasticity.benchmark import run_all
from elasticity.config import PolicyConfig
from elasticity.errors import InputError
from elasticity.simulation.families import (CHECK_SEEDS, FAMILIES, REPORTING_SEEDS, TUNING_SEEDS, WIDE_TUNING_SEEDS,
                                             family_of, suite)
from elasticity.simulation.job import DEFAULT_LATENCY_MODEL
from elasticity.simulation.runner import POLICIES, UNDONE_WITHIN_S
from elasticity.simulation.scenarios import builtin, with_latency_model

SEED_SETS = {"tuning": TUNING_SEEDS, "tuning-wide": WIDE_TUNING_SEEDS, "reporting": REPORTING_SEEDS,
             "check": CHECK_SEEDS}
RESCALE_SHARE = 0.6  # issue 14: elastream makes at most this share of ds2's rescales
MEDIAN_TARGET = 1.25  # issue 14: the median run costs at most this × the oracle
SHARE_OF_DS2 = f"{RESCALE_SHARE} × ds2"  # the floors' label for that rescale count


def share_of_ds2(results: dict) -> dict[str, int]:
    """The rescale count issue 14 allows a run (RESCALE_SHARE of ds2's, rounded down), to compute the floor at."""
    return {SHARE_OF_DS2: int(RESCALE_SHARE * results["ds2"]["rescales"])} if "ds2" in results else {}


def run_suite(seeds: tuple[int, ...], families: list[str] | None = None, with_builtin: bool = True,
              policies=POLICIES, progress=None, jobs: int = 1, config: PolicyConfig | None = None,
              scale: float = 1.0, latency_model: str = DEFAULT_LATENCY_MODEL) -> tuple[dict, dict]:
    """({NAME: {POLICY: summary}}, {NAME: rescale floors}) over the families' scenarios (their loads × scale) and,
    at scale 1, the built-ins; every job's queueing delay as `latency_model` (JobSpec)."""
    scenarios = suite(seeds, families, scale)
    if with_builtin and scale == 1.0:
        scenarios.update(builtin())
    scenarios = {n: with_latency_model(sc, latency_model) for n, sc in scenarios.items()}
    floors: dict[str, Any] = {}
    return (run_all(scenarios, policies=policies, progress=progress, floors=floors, jobs=jobs, budgets=share_of_ds2,
                    within=MEDIAN_TARGET, config=config), floors)


def by_family(results: dict, floors: dict, family=family_of) -> dict[str, dict[str, dict[str, float]]]:
    """{FAMILY: {POLICY: {"runs", "slo_violation_s", "x_oracle", "x_floor", "rescales", "rescales_undone"}}} (sums
    over seeds, or over a family's traces: `family` names a run's family)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, per_policy in results.items():
        fam = out.setdefault(family(name), {})
        oracle = per_policy["oracle"]["executor_seconds"]
        for pol, s in per_policy.items():
            if pol == "oracle":
                continue
            a = fam.setdefault(pol, {"runs": 0, "slo_violation_s": 0.0, "executor_seconds": 0.0,
                                     "oracle_executor_seconds": 0.0, "floor_executor_seconds": 0.0, "rescales": 0,
                                     "rescales_undone": 0})
            a["runs"] += 1
            a["slo_violation_s"] += s["slo_violation_s"]
            a["executor_seconds"] += s["executor_seconds"]
            a["oracle_executor_seconds"] += oracle
            a["floor_executor_seconds"] += floors[name]["oracle_standard"].get(pol, float("nan")) * oracle
            a["rescales"] += s["rescales"]
            a["rescales_undone"] += s.get("rescales_undone", 0)
    for fam in out.values():
        for a in fam.values():
            a["x_oracle"] = round(a["executor_seconds"] / a["oracle_executor_seconds"], 3)
            floor = a["floor_executor_seconds"]  # inf or nan where no schedule within the rescales keeps up
            a["x_floor"] = round(a["executor_seconds"] / floor, 3) if 0 < floor < float("inf") else None
    return out


SLO_AND_COST = ("slo_violation_s", "executor_seconds")


def no_worse(a: dict, b: dict, keys=(*SLO_AND_COST, "rescales")) -> bool:
    """a is no worse than b on every key (by default: SLO violation, executor-seconds and rescales, i.e. a
    Pareto-dominates b or ties it)."""
    return all(a[k] <= b[k] for k in keys)


def median_floors(floors: dict, runs) -> dict[str, float]:
    """Per rescale count (elastream's, ds2's, RESCALE_SHARE of ds2's), the median over the runs of the rescale-budget
    floor at that count over the oracle's cost: what the median run would cost a schedule with perfect foresight
    and that many rescales in every run, at the oracle's standard — whether the median and the rescale criteria
    can be met together."""
    per_run = [floors[n]["oracle_standard"] for n in runs if n in floors]
    labels = ("elastream", "ds2", SHARE_OF_DS2)
    return {lb: round(statistics.median(f[lb] for f in per_run), 3) for lb in labels
            if per_run and all(lb in f for f in per_run)}


def least_rescales_for_median(floors: dict, runs) -> int | None:
    """The fewest rescales in all with which, given perfect foresight, more than half the runs can each reach a floor
    of MEDIAN_TARGET × the oracle (so the median run can): the sum of the smallest per-run counts that reach it
    (`least_rescales_within`). None when too few runs reach it within the rescale counts measured."""
    ks = sorted(k for n in runs if n in floors for k in [floors[n].get("least_rescales_within")] if k is not None)
    need = len(runs) // 2 + 1
    return sum(ks[:need]) if runs and len(ks) >= need else None


def aggregate(results: dict, families: dict, floors: dict | None = None, family=family_of,
              known=FAMILIES) -> dict[str, Any]:
    """The issue's aggregate checks, over the runs whose `family` is `known` (the family scenarios, not the
    built-ins); with the floors, also the median run's floor at the rescale counts that matter (`median_floors`) and
    the fewest rescales for a median run at MEDIAN_TARGET (`least_rescales_for_median`)."""
    runs = {n: r for n, r in results.items() if family(n) in known}
    rescales = {p: sum(r[p]["rescales"] for r in runs.values()) for p in ("ds2", "elastream")}
    cost = {p: statistics.median(r[p]["executor_seconds"] / r["oracle"]["executor_seconds"] for r in runs.values())
            for p in next(iter(runs.values())) if p != "oracle"} if runs else {}
    fams = {f: v for f, v in families.items() if f in known}
    return {
        "elastream_rescales_over_ds2": round(rescales["elastream"] / max(rescales["ds2"], 1), 3) if runs else None,
        "median_run_x_oracle": {p: round(c, 3) for p, c in cost.items()},
        "median_run_floor_x_oracle": median_floors(floors or {}, runs),
        "least_rescales_for_median_at_target": least_rescales_for_median(floors or {}, runs),
        "ds2_rescales": rescales["ds2"] if runs else None,
        "families_where_elastream_dominates_ds2": sorted(f for f, v in fams.items()
                                                         if no_worse(v["elastream"], v["ds2"])),
        "families_slo_and_cost_le_ds2": sorted(f for f, v in fams.items()
                                               if no_worse(v["elastream"], v["ds2"], SLO_AND_COST)),
        # run by run, as a set of one trace per shape judges (its families are single runs)
        "runs_judged": len(runs),
        "runs_slo_or_cost_over_ds2": sorted(n for n, r in runs.items()
                                            if not no_worse(r["elastream"], r["ds2"], SLO_AND_COST)),
    }


def _ranges(seeds: tuple[int, ...]) -> str:
    """Seeds as runs of consecutive numbers: (0, 1, 2, 3, 30, 31) → "0-3, 30-31"."""
    runs: list[list[int]] = []
    for s in seeds:
        if runs and s == runs[-1][-1] + 1:
            runs[-1].append(s)
        else:
            runs.append([s])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else f"{r[0]}" for r in runs)


def family_tables(families: dict) -> list[str]:
    """The markdown lines of the per-family tables: each policy's sums, then elastream against ds2."""
    lines = ["| family | runs | policy | SLO violation (s) | × oracle | × floor | rescales | undone |",
             "|---|---:|---|---:|---:|---:|---:|---:|"]
    for fam, per_policy in families.items():
        for pol, a in per_policy.items():
            x_floor = "–" if a["x_floor"] is None else f"{a['x_floor']:.3f}"
            lines.append(f"| {fam} | {a['runs']} | {pol} | {a['slo_violation_s']:.0f} | {a['x_oracle']:.3f} | "
                         f"{x_floor} | {a['rescales']} | {a['rescales_undone']} |")
    lines += ["", "| family | elastream dominates ds2 | SLO ≤ ds2 | executor-s ≤ ds2 | rescales (elastream / ds2) |",
              "|---|---|---|---|---:|"]
    for fam, v in families.items():
        e, d = v["elastream"], v["ds2"]
        checks = [no_worse(e, d), no_worse(e, d, ["slo_violation_s"]), no_worse(e, d, ["executor_seconds"])]
        lines.append(f"| {fam} | " + " | ".join("yes" if ok else "**no**" for ok in checks)
                     + f" | {e['rescales']} / {d['rescales']} |")
    return lines


def aggregate_sentence(agg: dict, over: str, run: str, n_families: int) -> str:
    """The aggregate verdicts in a sentence: rescales over ds2's, each policy's median `run`, families ≤ ds2."""
    med = agg["median_run_x_oracle"]
    return (f"Aggregate over {over}: elastream makes {agg['elastream_rescales_over_ds2']} × ds2's rescales; the "
            f"median {run} costs " + ", ".join(f"{p} {c}" for p, c in med.items()) + " × the oracle. elastream's SLO "
            f"violation and executor-seconds are both ≤ ds2's in {len(agg['families_slo_and_cost_le_ds2'])} of "
            f"{n_families} families ({', '.join(agg['families_slo_and_cost_le_ds2']) or 'none'}).")


def markdown(families: dict, agg: dict, seeds_name: str, seeds: tuple[int, ...], elapsed_s: float,
             scale: float = 1.0, latency_model: str = DEFAULT_LATENCY_MODEL) -> str:
    model = "" if latency_model == DEFAULT_LATENCY_MODEL else f"; {latency_model} latency model"
    at_scale = "" if scale == 1.0 else f", loads × {scale:g}"
    with_builtin = ("plus the built-in scenarios" if scale == 1.0 else
                    f"every load × {scale:g} (the same shapes, run by a job sized for that magnitude; no built-ins)")
    lines = [f"## Elasticity, broad suite — load families over many seeds ({seeds_name} seeds{at_scale})", "",
             f"Made by `elastream bench elasticity --suite broad --seeds {seeds_name}"
             f"{'' if scale == 1.0 else f' --scale {scale:g}'}` on "
             f"{time.strftime('%Y-%m-%d')} ({elapsed_s:.0f} s). Families (elasticity/simulation/families.py{model}), each "
             f"drawn from the {seeds_name} seeds {', '.join(map(str, seeds))} (defaults are chosen on tuning seeds "
             f"only: {_ranges(TUNING_SEEDS)}, and {_ranges(WIDE_TUNING_SEEDS)} to weigh them), {with_builtin}; "
             "every policy with the same "
             "`PolicyConfig()`. Per family, sums over its seeds: SLO-violation seconds, executor-seconds over the "
             "oracle's (× oracle) and over the rescale-budget floor at the policy's own rescale count (× floor), "
             "rescales (– where no schedule within that many rescales keeps up), and of them those that reversed the "
             f"one before within {UNDONE_WITHIN_S / 60:.0f} minutes (undone). dominates = elastream no worse than "
             "ds2 on all three.", ""]
    lines += family_tables(families)
    lines += ["", aggregate_sentence(agg, "the families' runs", "run", len(FAMILIES)), ""]
    fl = agg.get("median_run_floor_x_oracle") or {}
    if SHARE_OF_DS2 in fl:
        lines += [f"The median run's rescale-budget floor — the least a schedule with perfect foresight spends, at the "
                  f"oracle's standard, with that many rescales in every run — is {fl[SHARE_OF_DS2]} × the oracle at "
                  f"{SHARE_OF_DS2}'s rescales, {fl['ds2']} × at ds2's and {fl['elastream']} × at elastream's own: a "
                  f"policy making {SHARE_OF_DS2}'s rescales in every run cannot have a median run under "
                  f"{fl[SHARE_OF_DS2]} × the oracle without serving below the oracle's standard (the aggregate "
                  "criterion lets rescales move between runs; this floor does not)." + _redistributed(agg), ""]
    return "\n".join(lines)


def _redistributed(agg: dict) -> str:
    least = agg.get("least_rescales_for_median_at_target")
    if least is None:
        return ""
    return (f" Moving them, a schedule with perfect foresight needs {least} rescales in all for more than half the "
            f"runs to reach a floor of {MEDIAN_TARGET} × the oracle (and so the median run), against the "
            f"{RESCALE_SHARE * agg['ds2_rescales']:.0f} that {SHARE_OF_DS2}'s rescales allow.")


REQUIRED = ("elastream", "ds2", "oracle")  # what the per-family verdicts and the aggregate compare


def chosen_policies(text: str | None) -> tuple[str, ...]:
    """The policies of a comma-separated list plus the required ones, in the runner's order (all when None)."""
    if text is None:
        return POLICIES
    asked = {p.strip() for p in text.split(",") if p.strip()}
    if not asked:
        raise InputError(f"--policies {text!r}: name at least one of {', '.join(POLICIES)}")
    unknown = sorted(asked - set(POLICIES))
    if unknown:
        raise InputError(f"--policies: unknown {', '.join(unknown)}; valid: {', '.join(POLICIES)}")
    return tuple(p for p in POLICIES if p in asked or p in REQUIRED)


def config_with(settings: list[str] | None) -> PolicyConfig | None:
    """PolicyConfig() with KNOB=VALUE settings (`--set`, for tuning), or None without any; InputError naming the
    setting that is not KNOB=VALUE, the unknown knob or the bad value."""
    if not settings:
        return None
    over = {}
    for item in settings:
        knob, eq, value = item.partition("=")
        if not eq or not knob.strip():
            raise InputError(f"--set {item!r}: expected KNOB=VALUE, e.g. elastream_min_saving=0.25")
        over[knob.strip()] = value.strip()
    try:
        return PolicyConfig(**over)
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'PolicyConfig'}: {e['msg']}"
                             for e in err.errors(include_url=False))
        raise InputError(f"--set: {problems} (the knobs are PolicyConfig's fields, elasticity/config.py)") from None


def bench_main(args) -> int:
    seeds_name = getattr(args, "seeds", None) or "reporting"
    seeds = SEED_SETS[seeds_name]
    policies = chosen_policies(getattr(args, "policies", None))
    config = config_with(getattr(args, "set", None))
    if policies != POLICIES and not getattr(args, "no_docs", False):
        print(f"a partial run ({', '.join(policies)}): docs/benchmarks.md is left as it is", flush=True)
        args.no_docs = True
    if config is not None and not getattr(args, "no_docs", False):
        print("a run with --set: docs/benchmarks.md is left as it is (its tables use the defaults)", flush=True)
        args.no_docs = True
    t0 = time.perf_counter()
    scale = getattr(args, "scale", None) or 1.0
    model = getattr(args, "latency_model", None) or DEFAULT_LATENCY_MODEL
    if model != DEFAULT_LATENCY_MODEL and not getattr(args, "no_docs", False):
        print(f"a run with the {model} latency model: docs/benchmarks.md is left as it is", flush=True)
        args.no_docs = True
    results, floors = run_suite(seeds, policies=policies, progress=lambda m: print(m, flush=True),
                                jobs=getattr(args, "jobs", 1), config=config, scale=scale, latency_model=model)
    families = by_family(results, floors)
    agg = aggregate(results, families, floors)
    md = markdown(families, agg, seeds_name, seeds, time.perf_counter() - t0, scale, model)
    if config is not None:
        md = md.replace("every policy with the same `PolicyConfig()`",
                        f"every policy with the same PolicyConfig, set: {', '.join(args.set)}", 1)
    print("\n" + md)
    if getattr(args, "json", None):
        Path(args.json).write_text(json_report.dumps({"scenarios": results, "families": families, "aggregate": agg,
                                                      "rescale_budget_floors": floors,
                                                      "seeds": {k: list(v) for k, v in SEED_SETS.items()}}))
    args.markdown = md
    return 0
