"""`elastream bench elasticity --traces DIR | --suite traces`: the broad suite's verdicts on CSV load traces.

Every `*.csv` of a directory is one run; its family is its file name up to the last `-` (`week-a.csv` → week), so
traces of one shape are judged together, as a family's seeds are. `--suite traces` runs the independent set of
`simulation/trace_set.py` (written to a temporary directory) and writes its section of docs/benchmarks.md;
`--traces DIR` runs your own and leaves the docs alone. `one_per_shape_odds` says how often a set of one trace per
family drawn from them — as issue 14's held-out set is made — would meet each criterion.
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from elasticity import json_report
from elasticity.benchmark import run_all
from elasticity.broad_suite import (MEDIAN_TARGET, RESCALE_SHARE, aggregate, aggregate_sentence, by_family,
                                    chosen_policies, config_with, family_tables, share_of_ds2)
from elasticity.errors import InputError
from elasticity.simulation.runner import UNDONE_WITHIN_S
from elasticity.simulation.scenarios import from_trace
from elasticity.simulation.trace_set import write_trace_set

SUITE_COMMAND = "elastream bench elasticity --suite traces"


def trace_family(name: str) -> str:
    """A trace's family: its name up to the last '-' (the whole name if it has none)."""
    head, _, _ = name.rpartition("-")
    return head or name


def run_traces(directory: str | Path, policies, progress=None, jobs: int = 1, config=None) -> tuple[dict, dict]:
    """({TRACE: {POLICY: summary}}, {TRACE: rescale floors}) over every *.csv in directory."""
    if not Path(directory).is_dir():
        raise InputError(f"--traces {directory}: no such directory")
    files = sorted(p for p in Path(directory).glob("*.csv") if not p.name.startswith("."))  # not editors' .#x.csv
    if not files:
        raise InputError(f"--traces {directory}: no *.csv trace in it (a trace: header time,rate)")
    scenarios = {f.stem: from_trace(str(f)) for f in files}
    floors: dict = {}
    results = run_all(scenarios, policies=policies, progress=progress, floors=floors, jobs=jobs,
                      budgets=share_of_ds2, within=MEDIAN_TARGET, config=config)
    return results, floors


HELD_OUT_DRAWS = 20000  # sets of one trace per shape drawn by `one_per_shape_odds`


def one_per_shape_odds(results: dict, draws: int = HELD_OUT_DRAWS, seed: int = 0) -> dict[str, float] | None:
    """How often a set of one trace per family, drawn from these at random (as issue 14's held-out set is made: one
    trace per shape), meets each of the issue's criteria — elastream's rescales ≤ RESCALE_SHARE × ds2's, its median
    trace ≤ MEDIAN_TARGET × the oracle, every family (its one trace) ≤ ds2 on SLO violation and executor-seconds — and
    all three. None without elastream, ds2 and the oracle in every trace."""
    need = ("elastream", "ds2", "oracle")
    if not results or any(p not in r for r in results.values() for p in need):
        return None
    families: dict[str, list[dict]] = {}
    for name, r in sorted(results.items()):
        families.setdefault(trace_family(name), []).append(r)
    rng = np.random.default_rng(seed)
    picks = [rng.integers(0, len(runs), draws) for runs in families.values()]

    def column(f) -> np.ndarray:  # (draws, families) of f(run) for the run drawn from each family
        return np.stack([np.array([f(r) for r in runs])[k] for runs, k in zip(families.values(), picks)], axis=1)

    ours, theirs = column(lambda r: r["elastream"]["rescales"]), column(lambda r: r["ds2"]["rescales"])
    cost = column(lambda r: r["elastream"]["executor_seconds"] / r["oracle"]["executor_seconds"])
    le = column(lambda r: r["elastream"]["slo_violation_s"] <= r["ds2"]["slo_violation_s"]
                and r["elastream"]["executor_seconds"] <= r["ds2"]["executor_seconds"])
    rescales = ours.sum(axis=1) <= RESCALE_SHARE * theirs.sum(axis=1)
    median = np.median(cost, axis=1) <= MEDIAN_TARGET
    every = le.all(axis=1)
    return {"draws": draws, "rescales": float(rescales.mean()), "median": float(median.mean()),
            "every_family": float(every.mean()), "all": float((rescales & median & every).mean())}


def odds_sentence(odds: dict[str, float] | None) -> str:
    """The odds of a one-per-shape set, said in a line ("" without them)."""
    if not odds:
        return ""
    return (f"Drawn as issue 14's held-out set is made — one trace per shape, {odds['draws']:,} draws — a set meets "
            f"elastream's rescales ≤ {RESCALE_SHARE} × ds2's in {odds['rescales']:.0%} of draws, its median trace ≤ "
            f"{MEDIAN_TARGET} × the oracle in {odds['median']:.0%}, every family ≤ ds2 on violation and cost in "
            f"{odds['every_family']:.0%}, and all three in {odds['all']:.1%}.")


def markdown(families: dict, agg: dict, source: str, command: str, elapsed_s: float) -> str:
    n = sum(v["elastream"]["runs"] for v in families.values())
    lines = [f"## Elasticity on CSV traces — {source}", "",
             f"Made by `{command}` on {time.strftime('%Y-%m-%d')} ({elapsed_s:.0f} s): {n} traces, each run as "
             "`elastream simulate --trace` runs it (1-s steps, the job sized for the first rate), grouped in "
             "families by file name (SHAPE-VARIANT.csv); every policy with the same `PolicyConfig()`. Per family, "
             "sums over its traces: SLO-violation seconds, executor-seconds over the oracle's (× oracle) and over "
             "the rescale-budget floor at the policy's own rescale count (× floor), rescales, and of them those that "
             f"reversed the one before within {UNDONE_WITHIN_S / 60:.0f} minutes (undone).", ""]
    lines += family_tables(families)
    lines += ["", aggregate_sentence(agg, "the traces", "trace", len(families))]
    lines += ["", odds_sentence(agg.get("one_per_shape"))] if agg.get("one_per_shape") else []
    return "\n".join(lines + [""])


def verdicts(results: dict, floors: dict | None = None) -> tuple[dict, dict]:
    """(per family, aggregate) of a traces run; without floors, the floor columns stay empty."""
    floors = floors if floors is not None else {n: {"oracle_standard": {}} for n in results}
    families = by_family(results, floors, family=trace_family)
    return families, aggregate(results, families, floors, family=trace_family, known=set(families))


def _of(total: int, missing: list[str], what: str) -> str:
    """"k of n WHAT", and which are missing: "6 of 8 families (not in a, b)"."""
    return f"{total - len(missing)} of {total} {what}" + (f" (not in {', '.join(missing)})" if missing else "")


def bench_main(args) -> int:
    """`--traces DIR` (your own: docs left alone) or `--suite traces` (the independent set: its docs section)."""
    policies = chosen_policies(getattr(args, "policies", None))
    config = config_with(getattr(args, "set", None))
    t0 = time.perf_counter()
    own = getattr(args, "traces", None)
    with tempfile.TemporaryDirectory(prefix="elastream-traces-") as tmp:
        directory = own or tmp
        if not own:
            write_trace_set(tmp)
        results, floors = run_traces(directory, policies, progress=lambda m: print(m, flush=True),
                                     jobs=getattr(args, "jobs", 1), config=config)
    families, agg = verdicts(results, floors)
    agg["one_per_shape"] = one_per_shape_odds(results)
    source = (f"your traces ({own})" if own else "an independent set (elasticity/simulation/trace_set.py: 8 shapes "
              "× 3 variants, no default chosen on it)")
    command = f"elastream bench elasticity --traces {own}" if own else SUITE_COMMAND
    md = markdown(families, agg, source, command, time.perf_counter() - t0)
    print("\n" + md)
    if own or config is not None or policies != chosen_policies(None):
        args.no_docs = True
    args.markdown = md
    failing = [f for f in families if f not in agg["families_slo_and_cost_le_ds2"]]
    print(f"elastream: SLO and cost ≤ ds2's in {_of(len(families), failing, 'families')}; rescales "
          f"{agg['elastream_rescales_over_ds2']} × ds2's; median trace "
          f"{agg['median_run_x_oracle']['elastream']} × the oracle")
    print(f"trace by trace (as a set of one trace per shape is judged): SLO and cost ≤ ds2's in "
          f"{_of(agg['runs_judged'], agg['runs_slo_or_cost_over_ds2'], 'traces')}")
    if getattr(args, "json", None):
        Path(args.json).write_text(json_report.dumps({"scenarios": results, "families": families, "aggregate": agg,
                                                      "rescale_budget_floors": floors}))
    return 0
