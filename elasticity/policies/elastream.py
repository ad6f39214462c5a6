"""`elastream`: our default — rate-based planning (as DS2) made latency-aware, noise-aware and predictive.

1. Per-instance true processing rate: the median, over the metrics window, of true rate / parallelism at the
   current parallelism (robust to one noisy scrape; scrapes that saw the last rescale are left out). Capacity
   accounts for key groups: p instances over K key groups (max parallelism) carry K / ceil(K/p) instances'
   worth of work, since the busiest instance holds ceil(K/p) of them.
2. Forecast of the source rate: Theil-Sen slope over the window (robust to a step), level = the latest
   scrapes; the plan covers the rate expected until the next moment we may act again (evaluation interval +
   stabilization window for a scale-up; + scale-down delay for a scale-down, which must last longer).
3. Headroom from the measured noise (z × robust std of the rate around its trend) instead of a fixed target
   utilization; the ceiling `elastream_max_utilization` adapts: lowered when p99 latency misses the target
   with no backlog (queueing), raised back slowly while latency has ample slack.
4. Hysteresis: scale out only when the planned load would push the current parallelism past the midpoint
   between the ceiling and 100 %; scale in only when it saves at least `elastream_min_saving` of the
   instances; the new parallelism is the least one whose key-group-aware capacity carries the plan.
5. Backlog: capacity adds backlog / catch-up duration and the restart cost, as DS2; a backlog that alone
   breaks the latency target drains within `elastream_slo_catch_up_s` instead.
6. Bursts: short bursts (×1.4 for minutes) end before anyone may react and the robust noise ignores them, so
   the bursts seen (a rate two scrapes sustained above the median around them) are remembered, decaying over
   `elastream_burst_memory_s`, and the plan keeps level × burst at 100 % busy.
7. Rescale budget: after a scale-out within the hour, a scale-in never spends the hour's last rescale
   (`elastream_scale_out_reserve`): only a scale-out can end the overload a rising load brings back.
With detector="regression", Me-Stream's threshold detection is an extra trigger: a recurring effective latency
bottleneck scales its worst stage by one level even if rates look fine.
"""
from __future__ import annotations

import math

import numpy as np

from elasticity.model import JobObservation, fmt_count, fmt_rate
from elasticity.policies.base import PolicyContext, Proposal, stage_bound
from elasticity.policies.rates import target_rates


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


def theil_sen(t: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Median of pairwise slopes and the median intercept; robust to a step or an outlier."""
    n = len(t)
    if n < 2:
        return 0.0, float(y[-1]) if n else 0.0
    i, j = np.triu_indices(n, 1)
    dt = t[j] - t[i]
    ok = dt > 0
    slope = float(np.median((y[j] - y[i])[ok] / dt[ok])) if ok.any() else 0.0
    intercept = float(np.median(y - slope * t))
    return slope, intercept


class RateForecast:
    """fit(t, rate) on the trend window; level, slope and noise; peak(horizon) = what to provision for.

    * slope: Theil-Sen over the window, kept only when the trend it implies over the window exceeds twice the
      noise (a trend smaller than the noise is no trend);
    * noise: the robust std of the window's first differences / √2 — insensitive to steps and trends;
    * level: the median of the last three points (robust to one outlier, follows a step within a minute),
      or the last point when it is higher and `optimistic` is False (a scale-up must not miss a step);
    * span: the time the points cover; peak() extrapolates the slope no further."""

    def fit(self, t, y, now: float) -> "RateForecast":
        t = np.asarray(t, dtype=float) - now
        y = np.asarray(y, dtype=float)
        self.n_ = len(y)
        self.slope_, self.noise_ = 0.0, 0.0
        self.span_ = float(t[-1] - t[0]) if self.n_ else 0.0
        if self.n_ >= 3:
            d = np.diff(y)
            self.noise_ = float(1.4826 * np.median(np.abs(d - np.median(d))) / math.sqrt(2.0))
        if self.n_ >= 6:
            slope, _ = theil_sen(t, y)
            span = float(t[-1] - t[0])
            self.slope_ = slope if abs(slope) * span > 2.0 * self.noise_ else 0.0
        self.recent_ = float(np.median(y[-3:])) if self.n_ else 0.0
        self.last_ = float(y[-1]) if self.n_ else 0.0
        return self

    def peak(self, horizon_s: float, z: float, optimistic: bool = False) -> float:
        """Highest rate expected within the horizon: level + max(slope, 0) × horizon + z × noise. A trend is
        extrapolated no further than the span it was measured over: six scrapes of noise can pass for a slope,
        and 20 minutes of it would size a job for a load that never comes."""
        level = self.recent_ if optimistic else max(self.recent_, self.last_)
        ahead = min(horizon_s, self.span_)
        return max(level + max(self.slope_, 0.0) * ahead, 0.0) + z * self.noise_


def burst_ratios(t, y, half: int) -> list[tuple[float, float]]:
    """(time, ratio) of the scrapes that stood above their neighbourhood: the rate two consecutive scrapes
    sustained over the median of the `half` scrapes either side. Judged only once those neighbours are seen,
    so a step (whose neighbourhood median follows it) or a trend is not a burst, nor is one noisy scrape."""
    y = np.asarray(y, dtype=float)
    out = []
    for i in range(half, len(y) - half - 1):
        base = float(np.median(y[i - half:i + half + 1]))
        if base > 0:
            out.append((float(t[i]), float(min(y[i], y[i + 1])) / base))
    return out


def burst_factor(bursts: list[list[float]], now: float, memory_s: float) -> float:
    """1 + the largest remembered burst excess, each decaying exponentially with its age."""
    excess = [(r - 1.0) * math.exp(-(now - t) / memory_s) for t, r in bursts]
    return 1.0 + max([0.0] + excess)


def catch_up_s(backlog: float | None, rate: float, cfg) -> float:
    """Seconds a plan gives the backlog to drain: DS2's catch-up duration, but a backlog that alone breaks the
    latency target (a surge, a long pause) gets `elastream_slo_catch_up_s` — every second it lasts is a
    violation, and the extra instances are scaled in once the load is known."""
    if rate > 0 and float(backlog or 0) / rate > cfg.latency_target_s:
        return min(cfg.catch_up_duration_s, cfg.elastream_slo_catch_up_s)
    return cfg.catch_up_duration_s


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


class CapacityEstimate:
    """Records/s one instance of a stage carries at 100 % busy, and how it was found.

    * ds2: median over the window of processing rate / busy fraction / parallelism — right when the busy
      fraction is proportional to the load (record-at-a-time engines);
    * regression: busy = a + b·x on (per-instance processed rate x, busy fraction) from the history. a is the
      share of each trigger spent on fixed per-batch work (micro-batch engines: scheduling, planning, commit),
      b the cost of one record, so one instance carries (1 − a)/b. Used when the intercept is material
      (a ≥ 0.05) and the points spread enough along x; DS2's estimate x/(a + b·x) < (1 − a)/b is then biased low;
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
        use = [q for q in points if q[2] > 0 and q[1] > 0]
        fit = capacity_fit([q[1] for q in use], [q[2] for q in use])
        if fit is not None:
            a, b = fit
            if 0.05 <= a < 0.95:
                reg = (1.0 - a) / b
                if reg > est.value:
                    est = CapacityEstimate(reg, "regression", a)
    flat = [q[1] * q[3] / q[4] for q in points if q[5] and q[4] > 0]
    if flat and max(flat) > est.value:
        est = CapacityEstimate(max(flat), "floor", est.overhead)
    return est


class ElastreamPolicy:
    name = "elastream"
    required_metrics = ("input_rate", "processing_rate", "utilization")
    MAX_POINTS = 60
    MIN_FORECAST_POINTS = 6

    # --- capacity -------------------------------------------------------------------------------------------
    def _capacities(self, ctx: PolicyContext) -> dict[str, CapacityEstimate]:
        cfg, obs, mem = ctx.config, ctx.observation, ctx.memory
        pts_mem: dict[str, list] = mem.setdefault("capacity_points", {})
        settle = cfg.evaluation_interval_s * 2.0  # scrapes that saw the pause or the warm-up are left out
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
            pts = pts[-self.MAX_POINTS:]
            pts_mem[s.name] = pts
            fallback = (s.true_processing_rate() or 0.0) / p
            out[s.name] = estimate_capacity(pts, p, fallback, cfg.elastream_capacity_regression)
        return out

    # --- bursts ---------------------------------------------------------------------------------------------
    def _bursts(self, ctx: PolicyContext, rates: list) -> dict[str, float]:
        """Per source, the burst factor to provision for: short bursts come and go faster than the
        stabilization window lets anyone react, and the robust noise estimate ignores them by design, so the
        ones seen are remembered (their excess decaying over `elastream_burst_memory_s`)."""
        cfg, mem = ctx.config, ctx.memory
        if cfg.elastream_burst_memory_s <= 0:
            return {src.name: 1.0 for src in ctx.observation.sources()}
        seen: dict[str, list] = mem.setdefault("bursts", {})
        half = max(1, int(round(cfg.elastream_burst_window_s / 2.0 / cfg.evaluation_interval_s)))
        out = {}
        for src in ctx.observation.sources():
            pts = [(t, r[src.name]) for t, r in rates if src.name in r]
            known = {t: r for t, r in seen.get(src.name, [])}
            for t, r in burst_ratios([t for t, _ in pts], [y for _, y in pts], half):
                if r > 1.0 + cfg.elastream_burst_min_excess:
                    known[t] = max(r, known.get(t, 0.0))
            keep = [[t, r] for t, r in sorted(known.items())
                    if (r - 1.0) * math.exp(-(ctx.now - t) / cfg.elastream_burst_memory_s) > 0.01]
            seen[src.name] = keep
            out[src.name] = burst_factor(keep, ctx.now, cfg.elastream_burst_memory_s)
        return out

    @staticmethod
    def _rescales_last_hour(ctx: PolicyContext) -> tuple[int, bool]:
        """Rescales realized within the last hour (the guards' hourly budget), as seen through
        `last_rescale_at` and kept in memory, and whether one of them was a scale-out."""
        mem, total = ctx.memory, sum(ctx.observation.parallelism.values())
        seen = [r for r in mem.get("rescale_times", []) if ctx.now - r[0] < 3600.0]
        t = ctx.last_rescale_at
        if t is not None and ctx.now - t < 3600.0 and all(r[0] != t for r in seen):
            # the parallelism grew since the last evaluation: that rescale was a scale-out
            seen.append([t, total > mem.get("total_parallelism", total)])
        mem["rescale_times"], mem["total_parallelism"] = seen, total
        return len(seen), any(up for _, up in seen)

    # --- planning -------------------------------------------------------------------------------------------
    @staticmethod
    def _plan(obs: JobObservation, rates: dict, caps: dict[str, CapacityEstimate], cfg, u_max: float,
              lo_of, hi_of, floor_of=None, restart: float = 0.0) -> dict[str, int]:
        """The least parallelism per stage (topological order) that carries its planned rate at u_max plus
        its backlog within the catch-up duration, and at least `elastream_burst_coverage` of what its upstream
        stages can emit at full speed with their planned parallelism."""
        plan: dict[str, int] = {}
        full_out: dict[str, float] = {}  # records/s a stage emits at full speed with its planned parallelism
        for s in obs.stages:
            K = s.max_parallelism
            m = caps[s.name].value
            rate = rates[s.name].target_input_rate
            need = rate * (1.0 + restart) / u_max + float(s.backlog or 0) / catch_up_s(s.backlog, rate, cfg)
            ups = [u for u in s.upstream if u in full_out]
            if ups and cfg.elastream_burst_coverage > 0:
                need = max(need, cfg.elastream_burst_coverage * sum(full_out[u] for u in ups))
            lo, hi = lo_of(s), hi_of(s)
            if floor_of is not None:
                lo = max(lo, min(floor_of(s), hi))
            p = least_parallelism(need, m, K, lo, hi) if m > 0 else int(s.parallelism)
            plan[s.name] = p
            # the most it can emit: its capacity, or what its upstream stages can push through it if less
            most_in = sum(full_out[u] for u in ups) if ups else math.inf
            full_out[s.name] = min(m * effective_parallelism(p, K), most_in) * rates[s.name].selectivity
        return plan

    def propose(self, ctx: PolicyContext) -> Proposal:
        cfg = ctx.config
        obs: JobObservation = ctx.observation
        mem = ctx.memory
        u_max = float(mem.get("u_max", cfg.elastream_max_utilization))
        # adapt the utilization ceiling to the latency target
        p99 = obs.latency_p99_s
        backlog_total = sum(s.backlog for s in obs.stages)
        caught_up = backlog_total <= obs.source_rate() * cfg.effective_backlog_tolerance_s
        if p99 is not None and caught_up:
            if p99 > cfg.latency_target_s:
                u_max = max(cfg.target_utilization, u_max - 0.05)
            elif p99 < 0.5 * cfg.latency_target_s:
                u_max = min(cfg.elastream_max_utilization, u_max + 0.005)
        mem["u_max"] = u_max
        used, rose = self._rescales_last_hour(ctx)
        u_up = (u_max + 1.0) / 2.0  # scale out only past this

        # the source rates over the trend window (longer than the metrics window), kept in memory
        rates = [r for r in mem.get("rates", []) if ctx.now - r[0] <= cfg.elastream_trend_window_s and r[0] < obs.timestamp]
        rates.append([obs.timestamp, {s.name: float(s.input_rate or 0.0) for s in obs.sources()}])
        mem["rates"] = rates
        forecasts = {}
        bursts = self._bursts(ctx, rates)
        for src in obs.sources():
            pts = [(t, r[src.name]) for t, r in rates if src.name in r]
            forecasts[src.name] = RateForecast().fit([t for t, _ in pts], [y for _, y in pts], ctx.now)
        # a scale-out provisions for the peak until the next rescale the guards allow anyway
        h_up = max(cfg.evaluation_interval_s + cfg.stabilization_window_s,
                   3600.0 / max(cfg.max_rescales_per_hour, 1))
        h_down = h_up
        z = cfg.elastream_noise_z
        use_fc = cfg.elastream_forecast

        def fc_rates(h: float, optimistic: bool) -> dict[str, float]:
            # a remembered burst must fit at 100 % busy: the rate that, planned at u_max, gives level × burst
            return {n: max(fc.peak(h if use_fc else 0.0, z, optimistic), fc.recent_ * bursts[n] * u_max)
                    for n, fc in forecasts.items()}

        # a rising trend: provision until the rescale after next (halves the rescales on a ramp)
        h_size = h_up * cfg.elastream_trend_horizon_factor
        up_rates = {r.name: r for r in target_rates(obs, fc_rates(h_up, False))}
        size_rates = {r.name: r for r in target_rates(obs, fc_rates(h_size, False))}
        down_rates = {r.name: r for r in target_rates(obs, fc_rates(h_down, True))}
        safe_rates = {r.name: r for r in target_rates(obs, fc_rates(h_down, False))}
        now_rates = {r.name: r for r in target_rates(obs)}
        caps = self._capacities(ctx)
        current = obs.parallelism

        inputs = {"u_max": round(u_max, 4)}
        for name, fc in forecasts.items():
            inputs[f"{name}.rate_level"] = round(fc.recent_, 3)
            inputs[f"{name}.rate_slope"] = round(fc.slope_, 5)
            inputs[f"{name}.rate_noise"] = round(fc.noise_, 3)
            inputs[f"{name}.burst_factor"] = round(bursts[name], 3)
        hot_stages = []
        for s in obs.stages:
            p, K, c = int(s.parallelism), s.max_parallelism, caps[s.name]
            cap_now = c.value * effective_parallelism(p, K)
            need_up = up_rates[s.name].target_input_rate + s.backlog / cfg.catch_up_duration_s
            hot = c.value > 0 and (need_up > u_up * cap_now or (
                s.backlog > now_rates[s.name].target_input_rate * cfg.effective_backlog_tolerance_s
                and s.backlog / cfg.catch_up_duration_s > (1.0 - u_max) * cap_now))
            if hot:
                hot_stages.append(s.name)
            inputs[f"{s.name}.per_instance_rate"] = round(c.value, 3)
            inputs[f"{s.name}.capacity"] = round(cap_now, 3)
            inputs[f"{s.name}.planned_rate"] = round(up_rates[s.name].target_input_rate, 3)
            inputs[f"{s.name}.backlog"] = round(s.backlog, 1)
            if c.overhead is not None:
                inputs[f"{s.name}.batch_overhead_fraction"] = round(c.overhead, 4)

        lo_of = lambda s: cfg.min_parallelism  # noqa: E731
        hi_of = lambda s: stage_bound(s.max_parallelism, cfg)  # noqa: E731
        targets = dict(current)
        parts: list[str] = []
        delay = None
        kept = ""
        if hot_stages:
            # one step for the whole graph: every stage gets what the planned load needs (the pause is paid anyway)
            plan = self._plan(obs, size_rates, caps, cfg, u_max, lo_of, hi_of, floor_of=lambda s: int(s.parallelism))
            for s in obs.stages:
                p, new = int(s.parallelism), plan[s.name]
                targets[s.name] = new
                if new > p:
                    back = f" + backlog {fmt_count(s.backlog)}" if s.backlog > 0 else ""
                    why = "" if s.name in hot_stages else " (with the others)"
                    cap_now = caps[s.name].value * effective_parallelism(p, s.max_parallelism)
                    parts.append(f"scale out {s.name} {p}→{new}{why}: capacity {fmt_rate(cap_now)} at "
                                 f"{u_up:.0%} cannot carry {fmt_rate(up_rates[s.name].target_input_rate)} "
                                 f"expected within {h_up:.0f}s{back}")
        elif caught_up and all(fc.n_ >= self.MIN_FORECAST_POINTS for fc in forecasts.values()):
            # no scale-in before the forecast has seen enough scrapes to know the load's noise and trend
            # hysteresis: a scale-in plans at a lower ceiling than a scale-out fires at
            u_in = u_max - cfg.elastream_hysteresis
            plan = self._plan(obs, down_rates, caps, cfg, u_in, lo_of, lambda s: int(s.parallelism))
            saved = sum(current[n] - plan[n] for n in plan)
            # a load that rose within the hour may rise again: keep the last rescales of the budget for it
            reserve = rose and cfg.max_rescales_per_hour - used <= cfg.elastream_scale_out_reserve
            worth = saved >= max(1.0, cfg.elastream_min_saving * sum(current.values()))
            if worth and reserve:
                kept = (f"steady: a scale-in saving {saved:.0f} instances waits: {used} of the hour's "
                        f"{cfg.max_rescales_per_hour} rescales used and the load rose within the hour; the last is "
                        f"kept for a scale-out")
            elif worth:
                targets = plan
                for s in obs.stages:
                    p, new = int(s.parallelism), plan[s.name]
                    if new < p:
                        parts.append(f"scale in {s.name} {p}→{new}: {fmt_rate(down_rates[s.name].target_input_rate)}"
                                     f" expected within {h_down:.0f}s needs {new} at {u_in:.0%} of "
                                     f"{fmt_rate(caps[s.name].value)}/instance")
                # confident: an established forecast with no upward trend, and the smaller job also carries the
                # pessimistic forecast (the last scrape, its noise band, any trend)
                safe = self._plan(obs, safe_rates, caps, cfg, u_in, lo_of, lambda s: int(s.parallelism))
                established = all(fc.slope_ <= 0 for fc in forecasts.values())
                if established and all(safe[n] <= plan[n] for n in plan):
                    delay = cfg.elastream_confident_scale_down_delay_s
                    inputs["confident_scale_in"] = 1.0

        if cfg.effective_detector == "regression" and not any(targets[n] > current[n] for n in targets):
            from elasticity.policies.mestream import MeStreamPolicy

            ms = MeStreamPolicy().propose(ctx)
            if not ms.hold and any(ms.targets[n] > current[n] for n in ms.targets):
                worst = max(ms.targets, key=lambda n: ms.inputs.get(f"{n}.bottleneck_level", 0.0))
                p = current[worst]
                targets = dict(current)
                targets[worst] = min(p + 1, stage_bound(obs.stage(worst).max_parallelism, cfg))
                inputs.update(ms.inputs)
                parts = [f"scale out {worst} {p}→{targets[worst]}: recurring latency bottleneck ({ms.reason})"]
                delay = None

        held = {n: round(b, 2) for n, b in bursts.items() if forecasts[n].recent_ * b * u_max
                > forecasts[n].peak(h_up if use_fc else 0.0, z)}
        if parts and held:
            parts.append("keeping capacity for the bursts seen: " + ", ".join(f"{n} ×{b}" for n, b in held.items()))
        if not parts:
            return Proposal(targets, kept or f"steady: planned load within {u_up:.0%} of capacity; no scale-in "
                            f"saves {cfg.elastream_min_saving:.0%}", inputs)
        return Proposal(targets, "; ".join(parts), inputs, scale_down_delay_s=delay)
