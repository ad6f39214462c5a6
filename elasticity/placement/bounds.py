"""Bounds on the number of bins a zero-overload placement needs, and the exact optimum for small instances.

- `lower_bound`: max over t of ceil(sum_i x_i(t) / C) (with unequal capacities: the fewest largest bins whose
  capacities add up to the peak total load).
- `exact_min_bins`: the zero-overload optimum by dynamic programming over subsets (uniform capacities, n <= 18):
  feasibility is down-closed (loads are non-negative), so the optimum is the fewest maximal feasible subsets
  that cover all items; layer k holds the item sets coverable by k subsets, each extended only by subsets that
  hold the lowest item it misses.
"""
from __future__ import annotations

import math

import numpy as np

from elasticity.placement.model import REL_TOL, Bins, Items, compress


def lower_bound(items: Items, bins: Bins | float) -> int:
    """max_t ceil(sum_i x_i(t) / C): no zero-overload placement uses fewer bins."""
    peak_total = float(items.loads.sum(axis=0).max()) if items.n else 0.0
    if isinstance(bins, (int, float)):
        return int(math.ceil(peak_total / float(bins) - REL_TOL)) if peak_total > 0 else 0
    caps = np.sort(bins.capacity)[::-1]
    need = np.searchsorted(np.cumsum(caps) * (1.0 + REL_TOL), peak_total) + 1 if peak_total > 0 else 0
    return int(need)  # may exceed bins.m: then no zero-overload placement exists


def lower_bound_mean(items: Items, capacity: float) -> float:
    """The fractional bound sum_i mean_t x_i(t) / C (what a perfect time-sharing would need); for reference."""
    return float(items.loads.mean(axis=1).sum() / capacity)


def exact_min_bins(items: Items, capacity: float, max_items: int = 18) -> tuple[int, np.ndarray] | None:
    """(optimum, bin_of) of the zero-overload optimum with bins of `capacity`, or None if n > max_items or some
    item alone exceeds the capacity. bin_of numbers bins 0..optimum-1."""
    n = items.n
    if n == 0:
        return 0, np.zeros(0, dtype=int)
    if n > max_items:
        return None
    X = compress(items.loads).loads
    cap = capacity * (1.0 + REL_TOL)
    if np.any(X.max(axis=1) > cap):
        return None
    full = (1 << n) - 1
    size = 1 << n
    sums = np.zeros((size, X.shape[1]))
    for i in range(n):
        sums[1 << i : 1 << (i + 1)] = sums[: 1 << i] + X[i]
    feasible = np.all(sums <= cap, axis=1)
    del sums
    masks = np.arange(size, dtype=np.int64)
    maximal = feasible.copy()
    for i in range(n):
        bit = 1 << i
        without = (masks & bit) == 0
        # S (without i) is not maximal if S | bit is feasible
        maximal[without] &= ~feasible[masks[without] | bit]
    F = masks[maximal]
    by_item = [F[(F >> i) & 1 == 1] for i in range(n)]

    layer = np.array([0], dtype=np.int64)
    history: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # per layer: (sets, parent set, added subset)
    for _k in range(1, n + 1):
        new_sets, new_prev, new_add = [], [], []
        low = _lowest_missing(layer, n)
        for e in np.unique(low):
            A = layer[low == e]
            B = by_item[int(e)]
            new_sets.append((A[:, None] | B[None, :]).ravel())
            new_prev.append(np.repeat(A, B.size))
            new_add.append(np.tile(B, A.size))
        sets = np.concatenate(new_sets)
        uniq, first = np.unique(sets, return_index=True)
        history.append((uniq, np.concatenate(new_prev)[first], np.concatenate(new_add)[first]))
        if uniq[-1] == full:
            k = len(history)
            bin_of = np.full(n, -1, dtype=int)
            s = full
            for level in range(k - 1, -1, -1):
                sets_l, prev_l, add_l = history[level]
                j = int(np.searchsorted(sets_l, s))
                b = int(add_l[j])
                for i in range(n):
                    if (b >> i) & 1 and bin_of[i] < 0:
                        bin_of[i] = level
                s = int(prev_l[j])
            return k, bin_of
        layer = uniq
    return None  # unreachable: singletons are feasible


def _lowest_missing(sets: np.ndarray, n: int) -> np.ndarray:
    inv = ~sets & ((1 << n) - 1)
    low = inv & -inv
    return np.log2(low.astype(float)).astype(int)


def lp_bound(items: Items, capacity: float, columns: list[np.ndarray] | None = None, time_limit: float = 10.0,
             pricing_time_limit: float = 5.0) -> tuple[float, bool]:
    """The configuration (set-cover) LP bound by column generation: min sum_p lambda_p over feasible bins p with
    sum_{p holds i} lambda_p >= 1. Pricing is a multi-dimensional knapsack (one constraint per distinct time step)
    solved by HiGHS. Returns (bound, converged): the LP optimum when converged, else Farley's bound
    z_master / max_reduced_value, valid at any iteration. ceil(bound) bounds the zero-overload optimum and is never
    below max_t ceil(sum x(t) / C) once converged. Converges in ~2 s for 12 items, not within 30 s for 50."""
    import time

    from scipy.optimize import Bounds as _Bounds, LinearConstraint, linprog, milp

    X = compress(items.loads).loads
    n = X.shape[0]
    cols = [np.asarray(c, dtype=bool) for c in (columns or [])] + list(np.eye(n, dtype=bool))
    start = time.perf_counter()
    best = 0.0
    knap = LinearConstraint(X.T, -np.inf, capacity * (1.0 + REL_TOL))
    while True:
        M = np.array(cols, dtype=float).T
        master = linprog(np.ones(M.shape[1]), A_ub=-M, b_ub=-np.ones(n), bounds=(0, None), method="highs")
        z, pi = float(master.fun), -master.ineqlin.marginals
        left = time_limit - (time.perf_counter() - start)
        price = milp(-pi, constraints=knap, integrality=np.ones(n), bounds=_Bounds(0, 1),
                     options={"time_limit": max(0.1, min(pricing_time_limit, left))})
        if price.x is None:
            return best, False
        value = -float(price.fun)
        dual = getattr(price, "mip_dual_bound", None)
        upper = -float(dual) if dual is not None and np.isfinite(dual) else value
        if price.status == 0 and value <= 1.0 + 1e-9:
            return max(best, z), True
        best = max(best, z / max(upper, 1.0))
        if time.perf_counter() - start > time_limit:
            return best, False
        cols.append(price.x > 0.5)
