"""Placement: where work runs. Items (executors, operators, apps) with time-series loads and pairwise traffic go
onto bins (workers, nodes) with capacities. Pure Python + NumPy/SciPy; no Kubernetes.

    from elasticity.placement import Items, Bins, place, evaluate
    a = place(Items(loads), Bins.uniform(10, 500.0), algorithm="elastream", seed=0)
    evaluate(items, bins, a).nodes

Algorithms (ALGORITHMS): "elastream" (ours: exact for small instances, else bin elimination by tabu search),
"ga" (seed 001's GA), "greedy" (seed 002's ETW/WTN), "rstorm" (R-Storm best fit, demand = peak),
"rstorm-mean" (demand = mean), "rstorm-profile" (demand = the whole time profile), "ffd" (first-fit decreasing on the whole time profile). See docs/placement.md.
"""
from __future__ import annotations

from typing import Any, Callable

from elasticity.errors import InputError
from elasticity.placement.baselines import ffd, rstorm
from elasticity.placement.best import elastream
from elasticity.placement.bounds import exact_min_bins, lower_bound
from elasticity.placement.ga import GAConfig, ga
from elasticity.placement.greedy import etw, greedy, wtn
from elasticity.placement.model import Assignment, Bins, Items, PlacementMetrics, evaluate


def _rstorm_peak(items: Items, bins: Bins, seed: int | None = None, **kw: Any) -> Assignment:
    return rstorm(items, bins, demand="peak", **kw)


def _rstorm_mean(items: Items, bins: Bins, seed: int | None = None, **kw: Any) -> Assignment:
    return rstorm(items, bins, demand="mean", **kw)


def _rstorm_profile(items: Items, bins: Bins, seed: int | None = None, **kw: Any) -> Assignment:
    return rstorm(items, bins, demand="profile", **kw)


ALGORITHMS: dict[str, Callable[..., Assignment]] = {
    "elastream": elastream,
    "ga": ga,
    "greedy": greedy,
    "rstorm": _rstorm_peak,
    "rstorm-mean": _rstorm_mean,
    "rstorm-profile": _rstorm_profile,
    "ffd": ffd,
}


def place(items: Items, bins: Bins, algorithm: str = "elastream", seed: int | None = 0, **options: Any) -> Assignment:
    """Assign every item to a bin with the named algorithm. options go to the algorithm (e.g. time_limit for
    elastream, config=GAConfig(...) for ga, workers_per_node for greedy)."""
    try:
        fn = ALGORITHMS[algorithm]
    except KeyError:
        raise InputError(f"unknown placement algorithm {algorithm!r}; choose from {', '.join(ALGORITHMS)}") from None
    return fn(items, bins, seed=seed, **options)


__all__ = [
    "ALGORITHMS", "Assignment", "Bins", "GAConfig", "Items", "PlacementMetrics", "etw", "evaluate",
    "exact_min_bins", "lower_bound", "place", "wtn",
]
