"""What the best schedule could cost with a budget of rescales — the yardstick for "cheap with few rescales".

The oracle rescales for free at every step; no real policy may. `RescaleBudgetBound` answers, by dynamic
programming over the evaluation intervals: with perfect foresight and at most k rescales, what is the least
executor-seconds of a schedule that gives every stage at least the parallelism it needs in every interval?
A schedule is piecewise constant: it starts at the job's deployed parallelism and may change it (any stages
at once: one rescale) only where a policy could, at the start of an evaluation interval. A segment's cheapest
parallelism is, per stage, the most any of its intervals needs; the DP places the change points.

The DP costs O(K·T²) for T intervals and K rescales: a 7-day trace at 30-s intervals has T = 20160, ~0.3 s
per allowed rescale (35 s for 112), against 0.6 s at T = 2880. Past `max_intervals` intervals (default 2880, a
day at 30 s) it plans over blocks of ⌈T / max_intervals⌉ consecutive intervals, each needing per stage the
least any of its intervals needs: a lower but still valid floor (see `coarsen`), marked by `block_` > 1.

Two standards of "needs" (functions below):
* `oracle_needs` — what the oracle itself gives each interval (its latency budget): the bound is then a floor
  for any schedule that serves as well as the oracle with k rescales;
* `full_utilization_needs` — the least capacity that carries the interval's mean load at 100 % utilization
  (no queueing headroom at all): a floor for any schedule that merely keeps up, whatever its latency.
If even the second floor with k rescales exceeds 1.15 × the oracle's cost, no policy making k rescales can be
within 1.15 × the oracle while keeping up with the load.
"""
from __future__ import annotations

import numpy as np

from elasticity.simulation.oracle import Oracle


class RescaleBudgetBound:
    """fit(needs, start, weights) → costs_[k] = least cost with at most k rescales, for k = 0..max_rescales
    (inf where impossible: with 0 rescales, whenever the deployed parallelism falls short somewhere).
    Beyond max_intervals intervals it plans over blocks (see `coarsen`); block_ is the block size used, 1 when
    exact."""

    MAX_INTERVALS = 2880  # a day of 30-s intervals: still exact, and under a second for a hundred rescales

    def __init__(self, max_rescales: int, max_intervals: int = MAX_INTERVALS) -> None:
        if max_rescales < 0:
            raise ValueError("max_rescales must be ≥ 0")
        if max_intervals < 1:
            raise ValueError("max_intervals must be ≥ 1")
        self.max_rescales = int(max_rescales)
        self.max_intervals = int(max_intervals)

    def fit(self, needs: np.ndarray, start: np.ndarray, weights: np.ndarray) -> "RescaleBudgetBound":
        """needs: (intervals, stages) parallelism each interval needs; start: (stages,) deployed parallelism;
        weights: (intervals,) seconds in each interval (executor-seconds = parallelism × weight)."""
        needs, weights = np.asarray(needs, dtype=float), np.asarray(weights, dtype=float)
        self.block_ = max(1, -(-needs.shape[0] // self.max_intervals))
        needs, weights = coarsen(needs, weights, self.block_)
        # T intervals leave T places to change, so more rescales than that cannot lower the cost
        k = min(self.max_rescales, needs.shape[0])
        costs = _least_costs(needs, np.asarray(start, dtype=float), weights, k)
        self.costs_ = np.concatenate([costs, np.full(self.max_rescales - k, costs[-1])])
        return self

    def cost(self, k: int) -> float:
        """Least cost with at most k rescales (k beyond max_rescales gets the max_rescales cost, an upper value)."""
        return float(self.costs_[min(max(int(k), 0), self.max_rescales)])


def coarsen(needs: np.ndarray, weights: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """Blocks of `block` consecutive intervals: a block needs, per stage, the least any of its intervals needs,
    and weighs their sum. The bound over blocks is still a floor: map any schedule x (k changes) to y, which
    holds over each block x's value at the block's interval where x costs least; y covers the block's needs,
    costs no more than x over it, and changes at most k times (y changes between two blocks only if x changes
    between their chosen intervals, and those spans do not overlap). Not the per-stage min of x: with several
    stages that can change twice for one change of x."""
    if block == 1:
        return needs, weights
    starts = np.arange(0, needs.shape[0], block)
    return np.minimum.reduceat(needs, starts, axis=0), np.add.reduceat(weights, starts)


def _least_costs(needs: np.ndarray, start: np.ndarray, weights: np.ndarray, max_changes: int) -> np.ndarray:
    """The exact DP, O(max_changes · T²): [least cost with at most k change points for k = 0..max_changes]."""
    w = np.concatenate([[0.0], np.cumsum(weights)])  # w[j] = seconds before j
    T, K = needs.shape[0], max_changes
    f = np.full((K + 1, T + 1), np.inf)  # f[m, j]: intervals [0, j) with exactly m change points
    covered = np.concatenate([[True], np.cumprod(np.all(needs <= start, axis=1)).astype(bool)])
    f[0] = np.where(covered, w * start.sum(), np.inf)
    seg_max = np.zeros_like(needs)  # seg_max[i] = per-stage max of needs over [i, j)
    for j in range(1, T + 1):
        seg_max[:j] = np.maximum(seg_max[:j], needs[j - 1])
        seg_cost = (w[j] - w[:j]) * seg_max[:j].sum(axis=1)  # a segment [i, j) at its cheapest
        if K:
            f[1:, j] = (f[:K, :j] + seg_cost).min(axis=1)
    return np.minimum.accumulate(f[:, T])  # at most k change points


def interval_weights(n_steps: int, every: int, dt: float) -> np.ndarray:
    """Seconds in each evaluation interval of `every` steps (the last one may be shorter)."""
    full, rest = divmod(n_steps, every)
    return np.array([every * dt] * full + ([rest * dt] if rest else []))


def _block_reduce(x: np.ndarray, every: int, how) -> np.ndarray:
    n = x.shape[0]
    starts = np.arange(0, n, every)
    return how.reduceat(x, starts, axis=0)


def oracle_needs(oracle_parallelism: np.ndarray, every: int) -> np.ndarray:
    """Per evaluation interval and stage: the most the oracle used in it. (n_steps, stages) → (intervals, stages)."""
    return _block_reduce(np.asarray(oracle_parallelism), every, np.maximum)


def full_utilization_needs(oracle: Oracle, arrivals: np.ndarray, every: int) -> np.ndarray:
    """Per evaluation interval and stage: the least parallelism whose key-group-aware capacity carries the
    interval's mean input at 100 % utilization."""
    a = np.asarray(arrivals, dtype=float)
    counts = _block_reduce(np.ones_like(a), every, np.add)
    mean = _block_reduce(a, every, np.add) / counts
    out = np.zeros((len(mean), len(oracle.caps)), dtype=int)
    for i, caps in enumerate(oracle.caps):
        out[:, i] = np.minimum(np.searchsorted(caps, mean * oracle.scale[i] - 1e-9, side="left"), len(caps) - 1)
    return np.maximum(out, oracle.min_p)
