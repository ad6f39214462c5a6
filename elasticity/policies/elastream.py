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
5. Backlog: capacity adds backlog / catch-up duration and the restart cost, as DS2.
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
      or the last point when it is higher and `optimistic` is False (a scale-up must not miss a step)."""

    def fit(self, t, y, now: float) -> "RateForecast":
        t = np.asarray(t, dtype=float) - now
        y = np.asarray(y, dtype=float)
        self.n_ = len(y)
        self.slope_, self.noise_ = 0.0, 0.0
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
        """Highest rate expected within the horizon: level + max(slope, 0) × horizon + z × noise."""
        level = self.recent_ if optimistic else max(self.recent_, self.last_)
        return max(level + max(self.slope_, 0.0) * horizon_s, 0.0) + z * self.noise_


class ElastreamPolicy:
    name = "elastream"
    required_metrics = ("input_rate", "processing_rate", "utilization")

    def _per_instance_rates(self, ctx: PolicyContext) -> dict[str, float]:
        obs = ctx.observation
        out = {}
        for s in obs.stages:
            samples = []
            for o in ctx.history:
                if ctx.last_rescale_at is not None and o.timestamp <= ctx.last_rescale_at + ctx.config.evaluation_interval_s:
                    continue  # scrapes that saw the pause or warm-up understate the rate
                try:
                    h = o.stage(s.name)
                except KeyError:
                    continue
                if h.parallelism != s.parallelism or (h.utilization() or 0) < 0.2:
                    continue
                tr = h.true_processing_rate()
                if tr:
                    samples.append(tr / int(h.parallelism))
            if not samples:
                samples = [(s.true_processing_rate() or 0.0) / int(s.parallelism)]
            out[s.name] = float(np.median(samples))
        return out

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
        u_up = (u_max + 1.0) / 2.0  # scale out only past this

        # the source rates over the trend window (longer than the metrics window), kept in memory
        rates = [r for r in mem.get("rates", []) if ctx.now - r[0] <= cfg.elastream_trend_window_s and r[0] < obs.timestamp]
        rates.append([obs.timestamp, {s.name: float(s.input_rate or 0.0) for s in obs.sources()}])
        mem["rates"] = rates
        forecasts = {}
        for src in obs.sources():
            pts = [(t, r[src.name]) for t, r in rates if src.name in r]
            forecasts[src.name] = RateForecast().fit([t for t, _ in pts], [y for _, y in pts], ctx.now)
        # an up-step should last until the next rescale the guards allow anyway
        h_up = max(cfg.evaluation_interval_s + cfg.stabilization_window_s,
                   3600.0 / max(cfg.max_rescales_per_hour, 1))
        h_down = h_up + cfg.scale_down_delay_s
        z = cfg.elastream_noise_z
        use_fc = cfg.elastream_forecast

        def plan(h: float, optimistic: bool) -> dict[str, float]:
            return {n: fc.peak(h if use_fc else 0.0, z, optimistic) for n, fc in forecasts.items()}

        up_rates = {r.name: r for r in target_rates(obs, plan(h_up, False))}
        down_rates = {r.name: r for r in target_rates(obs, plan(h_down, True))}
        now_rates = {r.name: r for r in target_rates(obs)}
        mu = self._per_instance_rates(ctx)

        targets, inputs, parts = {}, {"u_max": round(u_max, 4)}, []
        for name, fc in forecasts.items():
            inputs[f"{name}.rate_level"] = round(fc.recent_, 3)
            inputs[f"{name}.rate_slope"] = round(fc.slope_, 5)
            inputs[f"{name}.rate_noise"] = round(fc.noise_, 3)
        plans = {}
        triggered = False
        for s in obs.stages:
            p = int(s.parallelism)
            K = s.max_parallelism
            m = mu[s.name]
            up, cur = up_rates[s.name], now_rates[s.name]
            catch = s.backlog / cfg.catch_up_duration_s
            restart = up.target_input_rate * cfg.restart_time_s / cfg.catch_up_duration_s
            cap_now = m * effective_parallelism(p, K)
            need_up = up.target_input_rate + catch
            hot = m > 0 and (need_up > u_up * cap_now or (
                s.backlog > cur.target_input_rate * cfg.effective_backlog_tolerance_s
                and catch > (1.0 - u_max) * cap_now))
            triggered |= hot
            plans[s.name] = (p, K, m, cap_now, need_up, restart, hot)
            inputs[f"{s.name}.per_instance_rate"] = round(m, 3)
            inputs[f"{s.name}.capacity"] = round(cap_now, 3)
            inputs[f"{s.name}.planned_rate"] = round(up.target_input_rate, 3)
            inputs[f"{s.name}.backlog"] = round(s.backlog, 1)
        for s in obs.stages:
            p, K, m, cap_now, need_up, restart, hot = plans[s.name]
            hi = stage_bound(K, cfg)
            lo = cfg.min_parallelism
            new = p
            if triggered and m > 0:
                # one step for the whole graph: every stage gets what the planned load needs (the pause is paid anyway)
                new = max(p, least_parallelism(need_up / u_max + restart, m, K, p, hi))
                if new > p:
                    back = f" + backlog {fmt_count(s.backlog)}" if s.backlog > 0 else ""
                    why = "" if hot else " (with the others)"
                    parts.append(f"scale out {s.name} {p}→{new}{why}: capacity {fmt_rate(cap_now)} at "
                                 f"{u_up:.0%} cannot carry {fmt_rate(up_rates[s.name].target_input_rate)} expected "
                                 f"within {h_up:.0f}s{back}")
            elif m > 0 and caught_up:
                down = down_rates[s.name]
                keep = max(down.target_input_rate, up_rates[s.name].target_input_rate if not use_fc else 0.0)
                keep *= 1.0 + cfg.restart_time_s / cfg.catch_up_duration_s
                cand = least_parallelism(keep / u_max, m, K, lo, p)
                if cand < p and (p - cand) >= max(1.0, cfg.elastream_min_saving * p):
                    new = cand
                    parts.append(f"scale in {s.name} {p}→{new}: {fmt_rate(down.target_input_rate)} expected "
                                 f"within {h_down:.0f}s needs {new} at {u_max:.0%} of "
                                 f"{fmt_rate(m)}/instance")
            targets[s.name] = max(lo, min(new, hi))

        if cfg.effective_detector == "regression" and not any(targets[n] > obs.parallelism[n] for n in targets):
            from elasticity.policies.mestream import MeStreamPolicy

            ms = MeStreamPolicy().propose(ctx)
            if not ms.hold and any(ms.targets[n] > obs.parallelism[n] for n in ms.targets):
                worst = max(ms.targets, key=lambda n: ms.inputs.get(f"{n}.bottleneck_level", 0.0))
                p = obs.parallelism[worst]
                targets = dict(obs.parallelism)
                targets[worst] = min(p + 1, stage_bound(obs.stage(worst).max_parallelism, cfg))
                inputs.update(ms.inputs)
                parts = [f"scale out {worst} {p}→{targets[worst]}: recurring latency bottleneck ({ms.reason})"]

        if not parts:
            return Proposal(targets, f"steady: planned load within {u_up:.0%} of capacity; no scale-in saves "
                            f"{cfg.elastream_min_saving:.0%}", inputs)
        return Proposal(targets, "; ".join(parts), inputs)
