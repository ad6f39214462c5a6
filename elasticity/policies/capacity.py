"""What one instance of a stage carries, and the least parallelism that carries a load: key-group aware
(`effective_parallelism`, `least_parallelism`) and robust to micro-batch engines (`estimate_capacity`)."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from elasticity.policies.forecast import theil_sen

if TYPE_CHECKING:
    from elasticity.policies.base import PolicyContext


def effective_parallelism(p: int, key_groups: int | None) -> float:
    """Instances' worth of work p instances can do when K key groups are spread over them: K / ceil(K/p)."""
    if p <= 0:
        return 0.0
    if not key_groups or p >= key_groups:
        return float(min(p, key_groups) if key_groups else p)
    return key_groups / math.ceil(key_groups / p)


def least_parallelism(capacity: float, per_instance: float, key_groups: int | None, lo: int, hi: int) -> int:
    """The least p in [lo, hi] with per_instance × effective_parallelism(p) ≥ capacity (hi if none)."""
    if per_instance <= 0:
        return hi
    for p in range(lo, hi + 1):
        if per_instance * effective_parallelism(p, key_groups) >= capacity - 1e-9:
            return p
    return hi


def capacity_fit(x, y) -> tuple[float, float] | None:
    """busy = a + b × (processed records/s per instance), fitted robustly (Theil-Sen). Returns (a, b) or None
    when the points do not spread enough along x to separate a fixed cost from a per-record cost."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if len(x) < 6:
        return None
    med = float(np.median(x))
    if med <= 0 or (np.percentile(x, 90) - np.percentile(x, 10)) < 0.15 * med:
        return None
    b, a = theil_sen(x, y)
    if b <= 0:
        return None
    return a, b


REGRESSION_MAX_REACH = 3.0  # the regression extrapolates at most this × the highest per-instance rate it saw


class CapacityEstimate:
    """Records/s one instance of a stage carries at 100 % busy, and how it was found.

    * ds2: median over the window of processing rate / busy fraction / parallelism — right when the busy
      fraction is proportional to the load (record-at-a-time engines);
    * regression: busy = a + b·x on (per-instance processed rate x, busy fraction) from the history. a is the
      share of each trigger spent on fixed per-batch work (micro-batch engines: scheduling, planning, commit),
      b the cost of one record, so one instance carries (1 − a)/b. Used when the intercept is material
      (a ≥ 0.05) and the points spread enough along x; DS2's estimate x/(a + b·x) < (1 − a)/b is then biased low.
      Flat-out scrapes are left out of the fit, and it reaches at most `REGRESSION_MAX_REACH` × the highest rate seen;
    * floor: the highest per-instance rate the stage actually sustained while running flat out (a queue and
      busy ≥ 90 %) — what was done can be done."""

    def __init__(self, value: float, method: str, overhead: float | None = None) -> None:
        self.value = value
        self.method = method
        self.overhead = overhead


def estimate_capacity(points: list[list[float]], current_p: int, fallback: float, regression: bool = True
                      ) -> CapacityEstimate:
    """points: [t, x = processed/p, busy, p, eff, flat_out] of usable scrapes (oldest first)."""
    same = [q for q in points if int(q[3]) == current_p and q[2] >= 0.2 and q[1] > 0]
    if same:
        ds2 = float(np.median([q[1] / q[2] for q in same]))
    else:
        ds2 = fallback
    est = CapacityEstimate(ds2, "ds2")
    if regression:
        # not flat out: a saturated stage's busy fraction is capped (at eff / p), not a + b·x, and a cluster of them
        # fits b ≈ 0 — a capacity of billions that once scaled a 64-instance stage in to 1
        use = [q for q in points if q[2] > 0 and q[1] > 0 and not q[5]]
        fit = capacity_fit([q[1] for q in use], [q[2] for q in use])
        if fit is not None:
            a, b = fit
            if 0.05 <= a < 0.95:
                reg = (1.0 - a) / b
                if reg > est.value and reg <= REGRESSION_MAX_REACH * max(q[1] for q in use):
                    est = CapacityEstimate(reg, "regression", a)
    flat = [q[1] * q[3] / q[4] for q in points if q[5] and q[4] > 0]
    if flat and max(flat) > est.value:
        est = CapacityEstimate(max(flat), "floor", est.overhead)
    return est


def track_capacities(ctx: "PolicyContext", max_points: int = 60) -> dict[str, CapacityEstimate]:
    """Per stage, the capacity of one instance (`estimate_capacity`) from the scrapes kept in the policy's memory
    under "capacity_points" (the last `max_points`); scrapes that saw the last rescale's pause or warm-up are
    left out."""
    cfg, obs, mem = ctx.config, ctx.observation, ctx.memory
    pts_mem: dict[str, list] = mem.setdefault("capacity_points", {})
    settle = cfg.evaluation_interval_s * 2.0
    fresh = ctx.last_rescale_at is None or obs.timestamp > ctx.last_rescale_at + settle
    out = {}
    for s in obs.stages:
        p = int(s.parallelism)
        pts = [q for q in pts_mem.get(s.name, []) if q[0] < obs.timestamp]
        u = s.utilization()
        if fresh and u is not None and u > 0 and (s.processing_rate or 0) > 0:
            eff = effective_parallelism(p, s.max_parallelism)
            flat = float(s.backlog or 0) > float(s.input_rate or 0) * 1.0 and u >= 0.9
            pts.append([obs.timestamp, float(s.processing_rate) / p, u, p, eff, 1.0 if flat else 0.0])
        pts = pts[-max_points:]
        pts_mem[s.name] = pts
        fallback = (s.true_processing_rate() or 0.0) / p
        out[s.name] = estimate_capacity(pts, p, fallback, cfg.elastream_capacity_regression)
    return out
