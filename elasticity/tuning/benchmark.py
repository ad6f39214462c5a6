"""`elastream bench tuning`: the optimisers side by side on response surfaces that behave like a stream processor's
configuration (elasticity.tuning.problems, and elasticity.tuning.fitted: one fitted from a real `elastream tune`
run), at equal budgets, over many seeds.

Per problem and method: the median over seeds of the evaluations until the best found is within 5 % of the best
known configuration (the best of a dense random sample and of every run), how often that happened within the
budget, and the default configuration's p99 over the best found (higher is better).
"""
from __future__ import annotations

import argparse
import functools
import json
import math
import statistics
import time
from typing import Any

import numpy as np

from elasticity import json_report
from elasticity.tuning.loop import tune
from elasticity.tuning.optimizers import OPTIMIZERS
from elasticity.tuning.fitted import fit, load_report
from elasticity.tuning.problems import PROBLEMS, score

WITHIN = 0.05
DENSE_SAMPLE = 5000
REAL_RUNS = {"wordcount-real-fit": "wordcount-real"}  # surfaces fitted from real `elastream tune` runs


@functools.cache
def problem(name: str):
    """A modelled surface, or one fitted from a real run's report (fitted once per process)."""
    return PROBLEMS[name] if name in PROBLEMS else fit(load_report(REAL_RUNS[name]), name)


def run(problems: list[str], methods: list[str], seeds: list[int], budget: int, progress=print) -> dict[str, Any]:
    out: dict[str, Any] = {"problems": {}, "runs": {}}
    for name in problems:
        surface = problem(name)
        runs = {m: [] for m in methods}
        for method in methods:
            t0 = time.monotonic()
            for seed in seeds:
                result = tune(surface.evaluate, surface.space, OPTIMIZERS[method](surface.space, seed=seed), budget)
                runs[method].append(result)
            progress(f"  {name:<16} {method:<10} {len(seeds)} runs in {time.monotonic() - t0:.1f}s")
        best_known = min([known_best(name)] + [r.best().value for rs in runs.values() for r in rs if r.best()])
        default = score(surface, surface.space.default())
        out["problems"][name] = {m: summarize(rs, best_known, default, budget) for m, rs in runs.items()}
        out["problems"][name]["_best_known_p99_s"] = round(best_known, 4)
        out["problems"][name]["_default_p99_s"] = None if math.isinf(default) else round(default, 4)
        out["runs"][name] = {m: [r.best_so_far() for r in rs] for m, rs in runs.items()}
    return out


def known_best(name: str) -> float:
    """The best of a dense random sample of the space (fixed seed): a floor for 'the best known configuration'."""
    rng, surface = np.random.default_rng(12345), problem(name)
    return min(score(surface, surface.space.config(u)) for u in surface.space.random(rng, DENSE_SAMPLE))


def evals_to_within(curve: list[float | None], target: float) -> int | None:
    """The first evaluation (1-based) whose best-so-far is within the target, or None."""
    return next((i + 1 for i, v in enumerate(curve) if v is not None and v <= target), None)


def summarize(results, best_known: float, default: float, budget: int) -> dict[str, Any]:
    target = best_known * (1 + WITHIN)
    reached = [evals_to_within(r.best_so_far(), target) for r in results]
    counted = [n if n is not None else budget + 1 for n in reached]  # not reached: past the budget
    ratios = [default / r.best().value for r in results if r.best() is not None and math.isfinite(default)]
    return {"evals_to_within_5pct": statistics.median(counted),
            "reached": round(sum(n is not None for n in reached) / len(reached), 3),
            "best_vs_default": round(statistics.median(ratios), 3) if ratios else None,
            "failed_share": round(statistics.mean(r.to_dict()["failed"] / len(r.trials) for r in results), 3)}


def markdown(results: dict[str, Any], methods: list[str], seeds: list[int], budget: int, command: str) -> str:
    lines = [f"Command: `{command}` — run {time.strftime('%Y-%m-%d')}.", "",
             f"Protocol: {len(seeds)} reporting seeds ({seeds[0]}–{seeds[-1]}; seeds 0–29 were used while building "
             f"the optimisers), {budget} evaluations per run, the default configuration first. evals = median over "
             f"seeds of the evaluations until the best found is within {WITHIN:.0%} of the best known p99 (the "
             f"best of {DENSE_SAMPLE} random configurations and of every run); a run that never gets there counts "
             f"as {budget + 1}. reached = share of runs that got there. default/best = the default's p99 over the "
             "best found (median). failed = share of evaluations that failed (could not start, or fell behind).",
             "", "| problem | default p99 | best known p99 | method | evals | reached | default/best | failed |",
             "|---|---:|---:|---|---:|---:|---:|---:|"]
    for name, by_method in results["problems"].items():
        for m in methods:
            r = by_method[m]
            n = r["evals_to_within_5pct"]
            lines.append(f"| {name} | {by_method['_default_p99_s']} s | {by_method['_best_known_p99_s']} s | {m} | "
                         f"{'>' + str(budget) if n > budget else n:} | {r['reached']:.0%} | "
                         f"{r['best_vs_default']}× | {r['failed_share']:.0%} |")
    return "\n".join(lines) + "\n"


def bench_main(args: argparse.Namespace) -> int:
    if min(args.seeds, args.budget) < 1:
        print("error: --seeds and --budget must be at least 1")
        return 2
    methods = args.methods.split(",")
    known = [*PROBLEMS, *REAL_RUNS]
    problems = args.problems.split(",") if args.problems else known
    unknown = [m for m in methods if m not in OPTIMIZERS] + [p for p in problems if p not in known]
    if unknown:
        print(f"error: unknown method or problem {unknown[0]!r} (methods: {', '.join(OPTIMIZERS)}; problems: "
              f"{', '.join(known)})")
        return 2
    seeds = list(range(args.seed_base, args.seed_base + args.seeds))
    print(f"tuning benchmark: {len(problems)} problems x {len(methods)} methods x {len(seeds)} seeds, "
          f"{args.budget} evaluations each")
    results = run(problems, methods, seeds, args.budget)
    command = (f"elastream bench tuning --seeds {args.seeds} --seed-base {args.seed_base} --budget {args.budget}"
               + (f" --methods {args.methods}" if args.methods != "bo,random,hillclimb" else "")
               + (f" --problems {args.problems}" if args.problems else ""))
    text = markdown(results, methods, seeds, args.budget, command)
    print("\n" + text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(json_report.finite({"problems": {n: {m: v for m, v in r.items() if not m.startswith("_")}
                                    for n, r in results["problems"].items()},
                       "best_known_p99_s": {n: r["_best_known_p99_s"] for n, r in results["problems"].items()},
                       "default_p99_s": {n: r["_default_p99_s"] for n, r in results["problems"].items()},
                       "curves": results["runs"]}), f, indent=1, allow_nan=False)
    args.docs_markdown = text
    return 0
