"""What one instance of a stage carries, and the least parallelism that carries a load: key-group and hot-key aware
(`effective_parallelism`, `least_parallelism`, `hot_key_share`) and robust to micro-batch engines
(`estimate_capacity`)."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from elasticity.policies.forecast import theil_sen

if TYPE_CHECKING:
    from elasticity.policies.base import PolicyContext


HOT_KEY_MIN_EXCESS = 0.5  # a busiest instance less than this much over an even spread's busiest is an even spread
HOT_KEY_MIN_BUSY = 0.2  # the busy fractions tell a share only while the busiest instance does some work
HOT_KEY_PLATEAU = 0.9  # a skewed stage past this share of its most adds too little per instance to scale further


def effective_parallelism(p: int, key_groups: int | None, hot_share: float = 0.0) -> float:
    """Instances' worth of work p instances do when K key groups are spread over them — the busiest holds ceil(K/p)
    of them: K / ceil(K/p) — and when one key brings `hot_share` of the work (`hot_key_share`): its instance holds
    that share plus its groups' share of the rest, 1 / (hot_share + (1 − hot_share) × ceil(K/p) / K), which no
    parallelism takes past 1 / hot_share."""
    if p <= 0:
        return 0.0
    if not key_groups or p >= key_groups:
        even = float(min(p, key_groups) if key_groups else p)
    else:
        even = key_groups / math.ceil(key_groups / p)
    if hot_share <= 0:
        return even
    return 1.0 / (hot_share + (1.0 - hot_share) / even)


def least_parallelism(capacity: float, per_instance: float, key_groups: int | None, lo: int, hi: int,
                      hot_share: float = 0.0, plateau: bool = False) -> int:
    """The least p in [lo, hi] with per_instance × effective_parallelism(p) ≥ capacity. If none: the least p that
    carries what hi carries (over K key groups, 60 instances carry what 64 do: the rest would hold no more groups);
    or, with `plateau` (a scale-out) and a hot key, the least p that reaches `HOT_KEY_PLATEAU` of it (instances past
    it add almost nothing). Without `plateau` (a scale-in: hi is the current parallelism) a hot stage keeps all it
    carries."""
    if per_instance <= 0:
        return hi
    for p in range(lo, hi + 1):
        if per_instance * effective_parallelism(p, key_groups, hot_share) >= capacity - 1e-9:
            return p
    return plateau_parallelism(key_groups, hot_share if plateau else 0.0, lo, hi)


def plateau_parallelism(key_groups: int | None, hot_share: float, lo: int, hi: int) -> int:
    """The least p in [lo, hi] past which more instances, up to hi, add nothing worth a rescale: the least that does
    all the work hi instances do over K key groups, or with a hot key `HOT_KEY_PLATEAU` of it."""
    most = effective_parallelism(hi, key_groups, hot_share)
    share = HOT_KEY_PLATEAU if hot_share > 0 else 1.0
    return next((p for p in range(lo, hi + 1)
                 if effective_parallelism(p, key_groups, hot_share) >= share * most - 1e-9), hi)


def hot_key_share(busy_mean: float | None, busy_max: float | None, p: int, key_groups: int | None = None
                  ) -> float | None:
    """The share of a stage's work one key brings, from the busy fraction of its busiest instance and the mean over
    its p instances (None when they cannot tell: one instance or key group, too little work, no maximum reported).
    The busiest does b = busy_max / (busy_mean × p) of the work; an even spread over K key groups gives it
    e = 1 / effective_parallelism(p, K); a hot key plus its groups' share of the rest, s + (1 − s) × e = b, so
    s = (b − e) / (1 − e). 0 while b stays under (1 + `HOT_KEY_MIN_EXCESS`) × e: a few keys hash unevenly (20 words
    over 6 tasks put up to ~1.35 × e on the busiest executor)."""
    if p < 2 or not _finite(busy_max) or not _finite(busy_mean) or busy_mean <= 0:
        return None
    busy_max = min(float(busy_max), 1.0)  # Storm's capacity can pass 1; the mean is clipped as well
    even = 1.0 / effective_parallelism(p, key_groups)
    if busy_max < HOT_KEY_MIN_BUSY or even >= 1.0:
        return None
    busiest = min(busy_max / (min(float(busy_mean), 1.0) * p), 1.0)
    if busiest < (1.0 + HOT_KEY_MIN_EXCESS) * even:
        return 0.0
    return (busiest - even) / (1.0 - even)


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

    def __init__(self, value: float, method: str, overhead: float | None = None, hot_share: float = 0.0) -> None:
        self.value = value
        self.method = method
        self.overhead = overhead
        self.hot_share = hot_share  # the share of the work one key brings (`hot_key_share`), 0 when none is seen

    def carried(self, p: int, key_groups: int | None) -> float:
        """Records/s p instances carry at full speed (key groups and a hot key counted)."""
        return self.value * effective_parallelism(p, key_groups, self.hot_share)

    def least_parallelism(self, need: float, key_groups: int | None, lo: int, hi: int, plateau: bool = False) -> int:
        """The least p in [lo, hi] that carries `need` records/s (`least_parallelism`)."""
        return least_parallelism(need, self.value, key_groups, lo, hi, self.hot_share, plateau)


def estimate_capacity(points: list[list[float]], current_p: int, fallback: float, regression: bool = True,
                      hot_share: float = 0.0) -> CapacityEstimate:
    """points: [t, x = processed/p, busy, p, eff, flat_out] of usable scrapes (oldest first); hot_share: the stage's
    hot key (`hot_key_share`), carried by the estimate."""
    same = [q for q in points if int(q[3]) == current_p and q[2] >= 0.2 and q[1] > 0]
    if same:
        ds2 = float(np.median([q[1] / q[2] for q in same]))
    else:
        ds2 = fallback
    est = CapacityEstimate(ds2, "ds2", hot_share=hot_share)
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
                    est = CapacityEstimate(reg, "regression", a, hot_share)
    flat = [q[1] * q[3] / q[4] for q in points if q[5] and q[4] > 0]
    if flat and max(flat) > est.value:
        est = CapacityEstimate(max(flat), "floor", est.overhead, hot_share)
    return est


def track_capacities(ctx: "PolicyContext", max_points: int = 60, hot_key: bool | None = None
                     ) -> dict[str, CapacityEstimate]:
    """Per stage, the capacity of one instance (`estimate_capacity`) from the scrapes kept in the policy's memory
    under "capacity_points" (the last `max_points`); scrapes that saw the last rescale's pause or warm-up are
    left out. hot_key: read each stage's hot key (`_hot_share`; default: the config's `elastream_hot_key`)."""
    cfg, obs, mem = ctx.config, ctx.observation, ctx.memory
    pts_mem: dict[str, list] = mem.setdefault("capacity_points", {})
    settle = cfg.evaluation_interval_s * 2.0
    fresh = ctx.last_rescale_at is None or obs.timestamp > ctx.last_rescale_at + settle
    read_hot_keys = cfg.elastream_hot_key if hot_key is None else hot_key
    out = {}
    for s in obs.stages:
        p = int(s.parallelism)
        hot = _hot_share(mem, s, obs.timestamp, fresh) if read_hot_keys else 0.0
        pts = [q for q in pts_mem.get(s.name, []) if q[0] < obs.timestamp]
        u = s.utilization()
        if fresh and u is not None and u > 0 and (s.processing_rate or 0) > 0:
            eff = effective_parallelism(p, s.max_parallelism, hot)
            # flat out by the mean only: a hot key's saturated scrapes as floors (processed / eff) would carry any
            # error of the key's estimated share into the capacity (tried: the stress scenario hot-key 50 → 162 s)
            flat = float(s.backlog or 0) > float(s.input_rate or 0) * 1.0 and u >= 0.9
            pts.append([obs.timestamp, float(s.processing_rate) / p, u, p, eff, 1.0 if flat else 0.0])
        pts = pts[-max_points:]
        pts_mem[s.name] = pts
        fallback = (s.true_processing_rate() or 0.0) / p
        out[s.name] = estimate_capacity(pts, p, fallback, cfg.elastream_capacity_regression, hot)
    return out


HOT_KEY_POINTS = 6  # the hot key's share is the median of the last this many scrapes that measured it


def _hot_share(mem: dict, s, timestamp: float, fresh: bool) -> float:
    """The share of stage s's work its hottest key brings (`hot_key_share`), the median of the last scrapes that
    measured one — at the current parallelism if any did (a few keys hash unevenly, and differently at another
    parallelism), kept in the policy's memory under "hot_shares"; 0 when none was seen."""
    kept = [q for q in mem.get("hot_shares", {}).get(s.name, []) if q[0] < timestamp]
    share = hot_key_share(s.utilization(), s.busy_fraction_max, int(s.parallelism), s.max_parallelism) \
        if fresh else None
    if share is not None:
        kept.append([timestamp, int(s.parallelism), share])
    kept = kept[-3 * HOT_KEY_POINTS:]
    if kept:
        mem.setdefault("hot_shares", {})[s.name] = kept
    elif s.name in mem.get("hot_shares", {}):
        del mem["hot_shares"][s.name]
    here = [q[2] for q in kept if q[1] == int(s.parallelism)] or [q[2] for q in kept]
    return float(np.median(here[-HOT_KEY_POINTS:])) if here else 0.0


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)
