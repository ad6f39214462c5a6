"""`elastream`: our default — rate-based planning (as DS2) made latency-aware, noise-aware and predictive.
The items are numbered as in docs/elasticity.md, which gives each one's reasons and figures.

1. Per-instance true processing rate: the median, over the metrics window, of true rate / parallelism at the
   current parallelism (robust to one noisy scrape; scrapes that saw the last rescale are left out). Capacity
   accounts for key groups: p instances over K key groups (max parallelism) carry K / ceil(K/p) instances'
   worth of work, since the busiest instance holds ceil(K/p) of them.
2. Forecast of the source rate: Theil-Sen slope over the window (robust to a step) — or, for a rise that began late
   in it, the median first difference of the last `elastream_recent_trend_s` when most of them rise —, level = the
   latest scrapes; the plan covers the rate expected until the next moment we may act again (evaluation interval +
   stabilization window for a scale-up; + scale-down delay for a scale-down, which must last longer).
3. Headroom from the measured noise (z × robust std of the rate around its trend) instead of a fixed target
   utilization; the ceiling `elastream_max_utilization` adapts: lowered when p99 latency misses the target
   with no backlog (queueing), raised back slowly while latency has ample slack.
4. Burst coverage: a downstream stage carries at least `elastream_burst_coverage` × what its upstream stages are
   planned to pass on (their need, not their rounded-up capacity): spare capacity through the whole pipeline to
   drain a burst's queue; at least SURGE_COVERAGE downstream of a queue worth more than the latency target.
5. Hysteresis: scale out only when the planned load would push the current parallelism past the midpoint
   between the ceiling and 100 %; the new parallelism is the least one whose key-group-aware capacity carries
   the plan.
6. Scale-in: only once the forecast is established, planned at the ceiling minus `elastream_hysteresis`, and only
   when it saves at least `elastream_min_saving` of the instances — or, for a smaller job that still carries every
   level recalled (item 13) that the current one carries, once wanted for longer than `elastream_min_saving_age_s`,
   a share that falls with how long (a low load that has lasted is likely to last), down to
   `elastream_min_saving_floor`.
7. One step for the whole graph: when any stage must scale out, every stage gets what the planned load needs.
8. Backlog: capacity adds backlog / catch-up duration, as DS2; a backlog that alone breaks the latency target
   drains within `elastream_slo_catch_up_s` instead, adding at most `elastream_slo_drain_share` × the rate.
9. Bursts: short bursts (×1.4 for minutes) end before anyone may react and the robust noise ignores them, so
   the bursts seen (a rate two scrapes sustained above the median around them) are remembered, decaying over
   `elastream_burst_memory_s`, and the plan keeps level × burst at 100 % busy.
10. Rescale budget: after a scale-out within the hour, a scale-in never spends the hour's last rescale
   (`elastream_scale_out_reserve`): only a scale-out can end the overload a rising load brings back — unless it undoes
   the last scale-out once the load that called for it has gone (no stage below where it was before), saves at least
   half the job, and the load shows no on/off pattern (item 21's short low spells): a spike's scale-out left standing
   when the hour's budget went on spikes costs more, until a rescale frees, than the reserve saves.
11. Stalls: a rescale that stops the job (a Storm rebalance) is measured from the backlog it leaves; when the
   stall alone breaks the latency target, later plans also drain it within `elastream_slo_catch_up_s`.
12. Follow-up: a rescale that left a queue which keeps growing was too small (a step read half-way); the next
   scale-out asks to come `elastream_follow_up_s` after it instead of a whole stabilization window later — or one
   evaluation after it, if it was a scale-in: no instance of the smaller job warms up, and its queue growing is
   the load outrunning it.
13. Recall: a scale-out sizes for at least the highest level a source sustained within `elastream_recall_s` (a load
   that rises again mostly returns where it was: one rescale, not a climb in steps), and a trend is not extrapolated
   past a high reached before the current rise.
14. Hold: within `elastream_scale_out_hold_s` of a scale-out, no scale-in while the load is still at least where it
   was when the scale-out was proposed.
15. Queue ahead: a scale-out drains the queue as it will be when its instances carry (the queue now plus its growth
   over `elastream_queue_lead_s`), not the queue a half-seen step shows.
16. Wait for the load (`elastream_wait_for_load`): a scale-out the forecast calls for waits for the next evaluation
   while that is soon enough — while the load expected by the time instances added then would carry (evaluation
   interval + restart time, with its trend and noise band) stays under the ceiling, or, with no rising trend and a
   p99 within 40 % of the target, while the rate measured now stays under the scale-out threshold: a level only its
   noise band carries over is noise or a burst's, and a burst that never overloads the job is not worth two
   rescales.
17. Fall in one step (`elastream_fall_wait_s`, `elastream_fall_gain`): on a falling load (a source's trend down, seen
   over at least half the trend window), a worthwhile scale-in waits while the one the trend promises within 10
   minutes would save at least 1.5 × as much: a daily decline then takes one scale-in, not two.
18. Onset: a stage's queue that grew since the last evaluation by more than `elastream_onset_backlog_s` of its input,
   while its input rose and the p99 uses more than half the latency target, shows a step up seen part-way (the
   scrape averages the step with the level before): the plans take the step rate both imply, so the scale-out comes
   one evaluation earlier and sized for the step. C is a stage's capacity, or what it passed when it reports no busy
   fraction (a Storm spout).
19. Drain release: the instances a scale-out added to drain its queue go once it has drained and the load has held
   for `elastream_min_saving_age_s` (the hold of item 14 keeps capacity for the load, not for its queue), when that
   saves `elastream_min_saving_floor` of the job.
20. Bounds: a stage before one at its bound is planned for no more than BOUND_MARGIN × what that one passes at the
   ceiling: more only moves the queue downstream, and each such scale-out is a rescale bought for nothing. A
   scale-out the bounds leave nothing to add to is said as such (Proposal.at_bounds: the guards' AtBounds hold). A
   load no parallelism carries asks for the least parallelism that carries what the bound does (over 360 key groups,
   60 instances carry what 64 do), and the latency a job at its bounds misses does not lower the ceiling.
21. Gaps: a scale-in waits while, within the trend window, the load came back over what the smaller job carries after a
   low spell of at most `elastream_low_spell_max_s` longer than the current one will be when the scale-in is realized:
   on/off bursts then cost no pair of rescales per gap. Not while the user has set the scale-down delay.
22. Hot key (`elastream_hot_key`): a stage whose busiest instance (StageMetrics.busy_fraction_max) does more than an
   even spread's share holds a hot key, which no instance added splits: p instances carry 1 / (s + (1 − s) / eff)
   instances' worth (s the key's share, eff the key groups'); a load no parallelism carries asks for the plateau
   (90 % of what the bound carries) and is then held AtBounds, naming the key.
23. Season (`elastream_season_s`): a load that repeats shows its period in the autocorrelation of per-bucket means;
   a scale-in then carries what the load did one period ago within the next `elastream_season_ahead_s`.
24. Surprises (`elastream_surprise_headroom`): once a load has outrun a calm job and broken the target in several
   episodes within the memory, scale-ins plan that much further under the ceiling.
(9 — bursts —, 23 and 24 are off by default: on loads nobody tuned for each trades executor-seconds for violation or
rescales without gaining both.)
With detector="regression", Me-Stream's threshold detection is an extra trigger: a recurring effective latency
bottleneck scales its worst stage by one level (the next parallelism holding fewer key groups an instance) even if
rates look fine.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from elasticity.model import JobObservation, fmt_count, fmt_rate
from elasticity.policies.base import PolicyContext, Proposal, at_bounds_reason, stage_bound
from elasticity.policies.capacity import (CapacityEstimate, effective_parallelism, plateau_parallelism,
                                          track_capacities)
from elasticity.policies.forecast import RateForecast, burst_factor, burst_ratios, decayed_excess, low_spells
from elasticity.policies.rates import StageRates, target_rates
from elasticity.policies.season import SeasonalForecast, bucket_means


def drain_rate(backlog: float | None, rate: float, cfg) -> float:
    """Records/s a plan adds to drain a stage's backlog: DS2's backlog / catch-up duration; a backlog that alone
    breaks the latency target (a surge, a step back up, a long pause) drains within `elastream_slo_catch_up_s` —
    every second it lasts is a violation, and the extra instances are scaled in once the load is known — but adds
    at most `elastream_slo_drain_share` × the rate: a flash crowd's queue of minutes would otherwise ask for several
    times the job, held as long as the crowd."""
    queued = float(backlog or 0.0)
    steady = queued / cfg.catch_up_duration_s
    if breaks_target(queued, rate, cfg):
        return max(steady, slo_drain_rate(queued, rate, cfg))
    return steady


def breaks_target(queued: float, rate: float, cfg) -> bool:
    """A queue worth more than the latency target at its stage's rate: every second it lasts is a violation."""
    return rate > 0 and queued / rate > cfg.latency_target_s


def slo_drain_rate(queued: float, rate: float, cfg) -> float:
    """Records/s that drain `queued` within `elastream_slo_catch_up_s`, at most `elastream_slo_drain_share` × the
    rate: a surge's queue (drain_rate) and the stall a rescale will leave (ElastreamPolicy._plan) alike."""
    return min(queued / cfg.elastream_slo_catch_up_s, cfg.elastream_slo_drain_share * rate)


# a scale-in saving at least this share of the job may spend the rescale item 10 keeps for a scale-out (`_undo_plan`)
RESERVE_SPEND_SAVING = 0.5
UNDO_LOOKBACK_S = 300.0  # the load before a scale-out: the median source rate over this long before it (`_load_gone`)
SURGE_COVERAGE = 1.1  # the least burst coverage downstream of a surge (`_coverage`)
# a stage before one at its bound is planned for at most this × what that one passes at the ceiling (`_passable`):
# 1.0 (exactly what it passes) cost saturated runs a few seconds more violation than ds2's (the helper's trace set)
BOUND_MARGIN = 1.1


def _coverage(cfg, after_surge: bool) -> float:
    """The share over what its upstream stages pass on that a stage is planned for: `elastream_burst_coverage`, and
    at least SURGE_COVERAGE downstream of a queue that breaks the latency target — a step back up drains through
    every stage after it, and 5 % spare drains a minute's queue in 20."""
    return max(cfg.elastream_burst_coverage, SURGE_COVERAGE) if after_surge else cfg.elastream_burst_coverage


class ElastreamPolicy:
    name = "elastream"
    required_metrics = ("input_rate", "processing_rate", "utilization")
    MAX_POINTS = 60
    MIN_FORECAST_POINTS = 6

    # --- capacity -------------------------------------------------------------------------------------------
    def _capacities(self, ctx: PolicyContext) -> dict[str, CapacityEstimate]:
        return track_capacities(ctx, self.MAX_POINTS)

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
                    if decayed_excess(t, r, ctx.now, cfg.elastream_burst_memory_s) > 0.01]
            seen[src.name] = keep
            out[src.name] = burst_factor(keep, ctx.now, cfg.elastream_burst_memory_s, cfg.elastream_burst_recurrence,
                                         cfg.elastream_burst_window_s, cfg.elastream_burst_max_factor)
        return out

    @staticmethod
    def _rescales_last_hour(ctx: PolicyContext) -> tuple[int, bool, float | None]:
        """Rescales realized within the last hour (the guards' hourly budget), as seen through
        `last_rescale_at` and kept in memory; whether one of them was a scale-out; the time of a scale-out first
        seen now (or None)."""
        mem, total = ctx.memory, sum(ctx.observation.parallelism.values())
        seen = [r for r in mem.get("rescale_times", []) if ctx.now - r[0] < 3600.0]
        t, new_scale_out = ctx.last_rescale_at, None
        if t is not None and ctx.now - t < 3600.0 and all(r[0] != t for r in seen):
            # the parallelism grew since the last evaluation: that rescale was a scale-out
            before = mem.get("total_parallelism", total)  # unknown (a restart): neither out nor in
            seen.append([t, total > before])
            new_scale_out = t if total > before else None
            if total < before:  # a scale-in: the follow-up comes sooner (_follow_up)
                mem["scaled_in_at"] = t
            if new_scale_out is not None and "parallelism" in mem:  # the job the load ran on before it (_undo_plan)
                mem["before_scale_out"] = mem["parallelism"]
        mem["rescale_times"], mem["total_parallelism"] = seen, total
        mem["parallelism"] = dict(ctx.observation.parallelism)
        return len(seen), any(up for _, up in seen), new_scale_out

    @staticmethod
    def _load_that_scaled_out(ctx: PolicyContext, t: float) -> dict[str, float]:
        """Per source, the rate that called for the scale-out realized at t: the level its proposal saw (kept by
        propose()) or, if higher, the rate now. Not the rate now alone: a scale-out proposed at the end of a high
        phase is seen realized in the low one, and the hold would keep it for that low rate."""
        now = ctx.observation.source_rates()
        asked = ctx.memory.pop("scale_out_asked", None)
        if not asked or abs(t - asked[0]) > 2.0 * ctx.config.evaluation_interval_s:  # another's rescale (kubectl)
            return now
        return {n: max(r, asked[1].get(n, 0.0)) for n, r in now.items()}

    @staticmethod
    def _follow_up(ctx: PolicyContext) -> tuple[float | None, float]:
        """(`elastream_follow_up_s`, one evaluation after a scale-in, or None; the job's queue): the follow-up when
        the last rescale left the job behind — a queue the guards call catching up that grew since the last
        evaluation (a scale-out sized on a step half-seen, or a scale-in the load outran). A scale-out may then
        follow it before the stabilization window ends."""
        from elasticity.guards import backlog_catching_up  # the guards import the policies

        cfg, mem = ctx.config, ctx.memory
        catching, backlog, _ = backlog_catching_up(ctx.observation, cfg)
        before, mem["queue_before"] = mem.get("queue_before"), backlog
        behind = catching and before is not None and backlog > before and ctx.last_rescale_at is not None
        if not behind or cfg.elastream_follow_up_s <= 0:
            return None, backlog
        scaled_in = mem.get("scaled_in_at") == ctx.last_rescale_at
        return (min(cfg.elastream_follow_up_s, cfg.evaluation_interval_s) if scaled_in
                else cfg.elastream_follow_up_s), backlog

    @staticmethod
    def _stalling_pause(ctx: PolicyContext) -> float:
        """Seconds of input a rescale of this job stalls, when that alone breaks the latency target (a Storm
        rebalance stops the world; a Spark executor joins without a pause), else 0. The engine's measured stall
        (ctx.rescale_stall_s) when it reports one; and measured after each rescale made while the job was caught up
        as the largest jump of a stage's backlog, in seconds of its input, between the evaluations around it
        (a lower bound: part of it has drained), net of what a rise of its input rate queued over that interval,
        averaged with the earlier measurements. A rescale made with a queue
        — a scale-out into a surge — is not measured: the surge's own queue grows across it, and a flash crowd
        read as a 10-s stall kept a third more capacity for the rest of the day."""
        mem, obs, t = ctx.memory, ctx.observation, ctx.last_rescale_at
        now = {s.name: [float(s.backlog or 0.0), float(s.input_rate or 0.0)] for s in obs.stages}
        before = mem.get("backlog_before")
        if t is not None and before and before[0] <= t < obs.timestamp and mem.get("pause_for") != t:
            mem["pause_for"] = t
            tolerance = ctx.config.effective_backlog_tolerance_s
            if all(b <= r * tolerance for b, r in before[1].values()):
                # net of what a rise of the load itself queued over the interval (a crowd's onset is no stall)
                dt = obs.timestamp - before[0]
                jumps = [(now[n][0] - b - max(0.0, now[n][1] - r) * dt) / now[n][1]
                         for n, (b, r) in before[1].items() if n in now and now[n][1] > 0]
                jump = max([0.0] + jumps)
                old = mem.get("pause_s")
                mem["pause_s"] = jump if old is None else 0.5 * (old + jump)
        mem["backlog_before"] = [obs.timestamp, now]
        # the engine's own measurement, when it has one, bounds the backlog's (a lower bound) from below
        pause = max(float(mem.get("pause_s") or 0.0), float(ctx.rescale_stall_s or 0.0))
        return pause if pause >= 0.5 * ctx.config.latency_target_s else 0.0

    # --- planning -------------------------------------------------------------------------------------------
    @staticmethod
    def _plan(obs: JobObservation, rates: dict, caps: dict[str, CapacityEstimate], cfg, u_max: float,
              lo_of, hi_of, floor_of=None, pause_s: float = 0.0, queued_of=None, plateau: bool = False
              ) -> dict[str, int]:
        """The least parallelism per stage (topological order) that carries its planned rate at u_max plus
        its backlog's drain (`drain_rate`) and the backlog the rescale's own pause (pause_s) leaves within
        `elastream_slo_catch_up_s`, and at least `elastream_burst_coverage` × what its upstream stages are planned
        to pass on (their own need: rate, headroom and drain — not their rounded-up capacity). `plateau` (a
        scale-out): a hot stage no parallelism carries gets the least that does nearly what its bound would."""
        plan: dict[str, int] = {}
        planned_out: dict[str, float] = {}  # records/s a stage is planned to carry, times its selectivity
        surging: set[str] = set()  # stages whose own queue, or an upstream stage's, breaks the latency target
        through = ElastreamPolicy._passable(obs, rates, caps, cfg, u_max)
        for s in obs.stages:
            K = s.max_parallelism
            m = caps[s.name].value
            rate = rates[s.name].target_input_rate
            queued = queued_of(s) if queued_of is not None else float(s.backlog or 0)
            need = rate / u_max + drain_rate(queued, rate, cfg) + slo_drain_rate(rate * pause_s, rate, cfg)
            ups = [u for u in s.upstream if u in planned_out]
            pushed = sum(planned_out[u] for u in ups)
            after_surge = any(u in surging for u in ups)
            if ups and cfg.elastream_burst_coverage > 0:
                need = max(need, _coverage(cfg, after_surge) * pushed)
            need = min(need, through.get(s.name, math.inf))
            if after_surge or breaks_target(queued, rate, cfg):
                surging.add(s.name)
            lo, hi = lo_of(s), hi_of(s)
            if floor_of is not None:
                lo = max(lo, min(floor_of(s), hi))
            plan[s.name] = caps[s.name].least_parallelism(need, K, lo, hi, plateau) if m > 0 else int(s.parallelism)
            # covering the need, not the rounded-up capacity: on a small job a source needing 1.2 instances runs 2,
            # and covering those sized every stage after it for 1.7 × the load
            planned_out[s.name] = min(need, pushed if ups else math.inf) * rates[s.name].selectivity
        return plan

    @staticmethod
    def _passable(obs: JobObservation, rates: dict, caps: dict[str, CapacityEstimate], cfg, u_max: float
                  ) -> dict[str, float]:
        """Per stage upstream of another, the most records/s worth planning it for (item 20): what the stages after
        it pass at their bounds, planned at u_max with BOUND_MARGIN spare — a stage before one at its bound passes on
        no more than that one carries, and instances beyond that only move the queue downstream."""
        out: dict[str, float] = {}
        for d in obs.stages:
            m, r_d = caps[d.name].value, rates[d.name].target_input_rate
            if m <= 0 or r_d <= 0:
                continue
            most = caps[d.name].carried(stage_bound(d.max_parallelism, cfg), d.max_parallelism)
            for u in obs.upstream_of(d.name) - {d.name}:  # in d's terms: u's input over d's
                limit = BOUND_MARGIN * most / u_max * rates[u].target_input_rate / r_d
                out[u] = min(out.get(u, math.inf), limit)
        return out

    # --- one evaluation ---------------------------------------------------------------------------------------
    def propose(self, ctx: PolicyContext) -> Proposal:
        cfg, obs = ctx.config, ctx.observation
        current = obs.parallelism
        used, rose, scaled_out_at = self._rescales_last_hour(ctx)
        if scaled_out_at is not None:  # what the hold (item 14) keeps the scale-out for
            ctx.memory["scaled_out"] = [scaled_out_at, self._load_that_scaled_out(ctx, scaled_out_at)]
        pause_s = self._stalling_pause(ctx)
        look = self._outlook(ctx)
        inputs = self._inputs(obs, look, cfg)
        hot = self._hot_stages(obs, look.up, look.u_up, look, cfg)
        targets, parts, delay, waiting, at_bounds = dict(current), [], None, "", False
        follow_up, queued = self._follow_up(ctx)
        if hot or not look.caught_up:  # a scale-out wanted, or a queue: no low load lasts (item 6's relief)
            ctx.memory.pop("scale_in_wanted_since", None)
        if hot and cfg.elastream_wait_for_load:
            waiting = self._can_wait(obs, look, cfg)
            hot = [] if waiting else hot
        if hot:
            targets, parts = self._scale_out(obs, look, cfg, hot, pause_s)
            if parts and self._throughput_capped(obs, look, cfg, hot):
                targets, parts = dict(current), []
            ctx.memory["scale_out_asked"] = [ctx.now, {n: fc.recent_ for n, fc in look.forecasts.items()}]
            # what the load alone asks for: the rest drains a queue, and goes with it (_drained); stamped with the
            # clock's time, as the rescale it may become is (last_rescale_at), not the scrape's
            ctx.memory["drain_plan"] = [ctx.now, self._lasting(obs, look, cfg, look.u_max)]
            waiting = "" if parts else self._at_bounds(obs, look, cfg, hot)
            at_bounds = bool(waiting)
        elif not waiting and look.caught_up and all(fc.n_ >= self.MIN_FORECAST_POINTS
                                                    for fc in look.forecasts.values()):
            # no scale-in before the forecast has seen enough scrapes to know the load's noise and trend, nor
            # while the load that called for the last scale-out holds
            waiting = self._scale_out_held(obs, look, cfg, ctx.memory)
            if waiting:  # held for its load: the instances it added for its queue may go (item 19)
                targets, parts = self._drained(obs, look, cfg, ctx)
                if parts:
                    waiting, delay = "", cfg.elastream_confident_scale_down_delay_s
            if not waiting and not parts:
                targets, parts, delay, waiting = self._scale_in(ctx, look, used, rose, inputs, pause_s)
        ctx.memory["at_bounds"] = at_bounds  # the latency the bounds cost is no reason to lower the ceiling (_ceiling)
        if cfg.effective_detector == "regression" and not any(targets[n] > current[n] for n in targets):
            found = self._recurring_bottleneck(ctx, inputs)
            if found:
                targets, parts, delay = found[0], [found[1]], None
        if parts:
            parts += self._bursts_kept(look)
            urgent = follow_up if hot else None  # only a scale-out may come early
            if urgent is not None:
                parts.append(f"urgent: the queue the last rescale left grows ({fmt_count(queued)} records)")
            return Proposal(targets, "; ".join(parts), inputs, scale_down_delay_s=delay, follow_up_after_s=urgent)
        return Proposal(targets, waiting or f"steady: planned load within {look.u_up:.0%} of capacity; no scale-in "
                        f"saves {cfg.elastream_min_saving:.0%}", inputs, at_bounds=at_bounds)

    def _outlook(self, ctx: PolicyContext) -> "Outlook":
        cfg, obs, mem = ctx.config, ctx.observation, ctx.memory
        u_max, caught_up = self._ceiling(ctx)
        # the source rates over the trend window (longer than the metrics window), kept in memory
        rates = [r for r in mem.get("rates", [])
                 if ctx.now - r[0] <= cfg.elastream_trend_window_s and r[0] < obs.timestamp]
        rates.append([obs.timestamp, obs.source_rates()])
        mem["rates"] = rates
        bursts = self._bursts(ctx, rates)
        forecasts = {}
        for src in obs.sources():
            pts = [(t, r[src.name]) for t, r in rates if src.name in r]
            forecasts[src.name] = RateForecast(cfg.elastream_recent_trend_s).fit([t for t, _ in pts],
                                                                                 [y for _, y in pts], ctx.now)
        # a scale-out provisions for the peak until the next rescale the guards allow anyway
        h_up = max(cfg.evaluation_interval_s + cfg.stabilization_window_s, 3600.0 / max(cfg.max_rescales_per_hour, 1))
        # hysteresis: a scale-in plans at a lower ceiling than a scale-out fires at, lower still after surprises
        u_in = max(u_max - cfg.elastream_hysteresis - self._surprise_margin(ctx, caught_up), MIN_SCALE_IN_UTILIZATION)
        look = Outlook(u_max, u_in, caught_up, forecasts, bursts, h_up, cfg.elastream_noise_z, cfg.elastream_forecast)
        look.history = rates
        look.caps = self._capacities(ctx)
        look.onset = self._onset(ctx, look)
        look.recall, highs, look.levels = self._recall(ctx, rates)
        look.season = self._season(ctx)
        look.up = look.rates(obs, h_up, known_high=highs)
        # a rising trend: provision until the rescale after next (halves the rescales on a ramp)
        look.size = look.rates(obs, h_up * cfg.elastream_trend_horizon_factor, at_least=look.recall,
                               known_high=highs)
        look.down = look.rates(obs, h_up, optimistic=True)
        look.safe = look.rates(obs, h_up)
        look.now = {r.name: r for r in target_rates(obs, {n: max(r, look.onset.get(n, 0.0))
                                                          for n, r in obs.source_rates().items()})}
        return look

    @staticmethod
    def _surprise_margin(ctx: PolicyContext, caught_up: bool) -> float:
        """How much further under the ceiling a scale-in plans: `elastream_surprise_headroom` once surprises recur — a
        load that outran a calm job (caught up, p99 within the target) and broke the latency target at the next
        evaluation, in at least `elastream_surprise_recurrence` episodes (a window apart) within
        `elastream_surprise_memory_s`. A lone crowd leaves none; spikes that keep coming, the headroom ds2 always has."""
        cfg, obs, mem = ctx.config, ctx.observation, ctx.memory
        if cfg.elastream_surprise_headroom <= 0:
            return 0.0
        p99, rate = obs.latency_p99_s, obs.source_rate()
        queued = sum(s.backlog for s in obs.stages)
        broke = (p99 is not None and p99 > cfg.latency_target_s) or breaks_target(queued, rate, cfg)
        # episodes as [first, last] surprise: surprises at most a burst window after the last one extend it
        seen = [e for e in mem.get("surprises", []) if ctx.now - e[1] <= cfg.elastream_surprise_memory_s]
        if broke and mem.get("calm"):
            if seen and ctx.now - seen[-1][1] <= cfg.elastream_burst_window_s:
                seen[-1][1] = ctx.now
            else:
                seen.append([ctx.now, ctx.now])
        mem["surprises"] = seen
        mem["calm"] = caught_up and not broke
        return cfg.elastream_surprise_headroom if len(seen) >= cfg.elastream_surprise_recurrence else 0.0

    @staticmethod
    def _onset(ctx: PolicyContext, look: "Outlook") -> dict[str, float]:
        """Per source, the rate a step up seen part-way implies (item 18), where a stage's queue grew since the last
        evaluation by more than `elastream_onset_backlog_s` of its input: the scrape averages the step with the level
        before it, and the queue's growth tells how much of the window it filled. With r0 the stage's input then, r̄
        now (the window's average), C its capacity and ΔB the queue's growth over Δt: the step rate A filled τ
        seconds with (A − r0)·τ = (r̄ − r0)·Δt and (A − C)·τ = ΔB. A is kept between what the queue's growth alone
        proves (C + ΔB/Δt) and r0 + `ONSET_MAX_GAIN` × (r̄ − r0) (a queue from a capacity dip is no step)."""
        cfg, obs, mem = ctx.config, ctx.observation, ctx.memory
        now = {r.name: r for r in target_rates(obs)}
        before, mem["onset_before"] = mem.get("onset_before"), [obs.timestamp, {
            n: [r.target_input_rate, r.backlog] for n, r in now.items()}]
        if cfg.elastream_onset_backlog_s <= 0 or not before or (
                ctx.last_rescale_at is not None and ctx.last_rescale_at >= before[0]):
            return {}
        if obs.latency_p99_s is not None and obs.latency_p99_s <= 0.5 * cfg.latency_target_s:
            return {}  # a queue the latency does not feel (a micro-batch's own) is left to the next evaluation
        dt = obs.timestamp - before[0]
        gain: dict[str, float] = {}  # per stage, the step rate over the window's average
        for s in obs.stages:
            r0, b0 = before[1].get(s.name, (None, None))
            r, grown, cap = now[s.name].target_input_rate, now[s.name].backlog - (b0 or 0.0), _drained_by(s, look)
            if r0 is None or dt <= 0 or r <= r0 or cap <= r0 or grown < cfg.elastream_onset_backlog_s * r:
                continue
            x = (r - r0) * dt
            a = (cap * x - r0 * grown) / (x - grown) if x > grown else math.inf
            gain[s.name] = max(r, cap + grown / dt, min(a, r0 + ONSET_MAX_GAIN * (r - r0))) / r
        out = {}
        for src in obs.sources():
            g = max([gain[n] for n in gain if src.name in obs.upstream_of(n)], default=1.0)
            if g > 1.0:
                out[src.name] = float(src.input_rate or 0.0) * g
        return out

    @staticmethod
    def _recall(ctx: PolicyContext, rates: list) -> tuple[dict[str, float], dict[str, float], dict[str, list[float]]]:
        """Per source, (the highest level it sustained within `elastream_recall_s`, the highest of those from before
        the last half trend window, every one of those levels). A load that rises again mostly returns to where it
        has been (the next day's peak, the end of a dip), so a scale-out sizes for the first at once instead of
        climbing in steps; the second is a peak it may turn at again (the current rise's own levels are not one).
        Level = the median of the last five scrapes (a spike is not a level), kept as the highest per five minutes."""
        cfg, mem = ctx.config, ctx.memory
        if cfg.elastream_recall_s <= 0:
            return {}, {}, {}
        kept: dict[str, list] = mem.setdefault("levels", {})
        since = ctx.now - cfg.elastream_trend_window_s / 2.0
        recall, highs = {}, {}
        for src in ctx.observation.sources():
            ys = [r[src.name] for _, r in rates[-5:] if src.name in r]
            levels = [lv for lv in kept.get(src.name, []) if ctx.now - lv[0] <= cfg.elastream_recall_s]
            if len(ys) == 5:
                level, bucket = float(sorted(ys)[2]), ctx.now - ctx.now % 300.0
                if levels and levels[-1][0] == bucket:
                    levels[-1][1] = max(levels[-1][1], level)
                else:
                    levels.append([bucket, level])
            kept[src.name] = levels
            recall[src.name] = max([lv for _, lv in levels], default=0.0)
            highs[src.name] = max([lv for t, lv in levels if t < since], default=0.0)
        return recall, highs, {n: [lv for _, lv in kept[n]] for n in recall}

    @staticmethod
    def _season(ctx: PolicyContext) -> dict[str, float]:
        """Per source with a period (item 23), the highest rate it ran at one period ago within the next
        `elastream_season_ahead_s`, scaled to its level now: what a scale-in must still carry. Per-bucket mean rates
        are kept for `elastream_season_s`; the period is read from the whole buckets at every evaluation (a fit of a
        day's 720 buckets takes under a millisecond)."""
        cfg, mem, obs = ctx.config, ctx.memory, ctx.observation
        if cfg.elastream_season_s <= 0:
            return {}
        step = cfg.elastream_season_bucket_s
        start = obs.timestamp - obs.timestamp % step
        kept, out = mem.get("season", {}), {}
        mem["season"] = {}  # sources that went are forgotten
        for name, rate in obs.source_rates().items():
            buckets = [b for b in kept.get(name, []) if obs.timestamp - b[0] <= cfg.elastream_season_s]
            if buckets and buckets[-1][0] == start:
                buckets[-1][1] += float(rate)
                buckets[-1][2] += 1
            else:
                buckets.append([float(start), float(rate), 1])
            mem["season"][name] = buckets
            t, y = bucket_means(buckets[:-1], step)  # whole buckets only: the current one is still filling
            ahead = SeasonalForecast(min_corr=cfg.elastream_season_min_corr).fit(t, y).peak(
                cfg.elastream_season_ahead_s + (obs.timestamp - start))
            if ahead is not None:
                out[name] = ahead
        return out

    @staticmethod
    def _ceiling(ctx: PolicyContext) -> tuple[float, bool]:
        """The utilization ceiling, adapted to the latency target: −0.05 when p99 misses it with no backlog
        (queueing) — unless the job is at its bounds: the last evaluation said so, or a stage runs flat out where more
        instances carry no more (`_flat_out_at_bound`, which sees it one evaluation sooner). A job at its bounds queues
        at any ceiling, and a lower one only sizes the stages before it for more than the bounded one passes (a
        saturated week: 0.95 → 0.70 in 3 minutes, two scale-outs of the source for nothing). +0.005 back per
        evaluation while p99 has ample slack. Also: is the job caught up?"""
        cfg, obs, mem = ctx.config, ctx.observation, ctx.memory
        u_max = float(mem.get("u_max", cfg.elastream_max_utilization))
        p99 = obs.latency_p99_s
        backlog_total = sum(s.backlog for s in obs.stages)
        caught_up = backlog_total <= obs.source_rate() * cfg.effective_backlog_tolerance_s
        if p99 is not None and caught_up:
            if p99 > cfg.latency_target_s and not (mem.get("at_bounds") or _flat_out_at_bound(obs, cfg)):
                u_max = max(cfg.target_utilization, u_max - 0.05)
            elif p99 < 0.5 * cfg.latency_target_s:
                u_max = min(cfg.elastream_max_utilization, u_max + 0.005)
        mem["u_max"] = u_max
        return u_max, caught_up

    @staticmethod
    def _inputs(obs: JobObservation, look: "Outlook", cfg) -> dict[str, float]:
        inputs = {"u_max": round(look.u_max, 4)}
        for name, fc in look.forecasts.items():
            inputs[f"{name}.rate_level"] = round(fc.recent_, 3)
            inputs[f"{name}.rate_slope"] = round(fc.slope_, 5)
            inputs[f"{name}.rate_noise"] = round(fc.noise_, 3)
            inputs[f"{name}.burst_factor"] = round(look.bursts[name], 3)
            if name in (look.season or {}):
                inputs[f"{name}.season_peak"] = round(look.season[name], 3)
        if cfg.elastream_surprise_headroom > 0:  # item 24 on: say where scale-ins plan
            inputs["u_in"] = round(look.u_in, 4)
        for s in obs.stages:
            c = look.caps[s.name]
            inputs[f"{s.name}.per_instance_rate"] = round(c.value, 3)
            inputs[f"{s.name}.capacity"] = round(look.capacity_now(s), 3)
            inputs[f"{s.name}.planned_rate"] = round(look.up[s.name].target_input_rate, 3)
            inputs[f"{s.name}.backlog"] = round(s.backlog, 1)
            if c.overhead is not None:
                inputs[f"{s.name}.batch_overhead_fraction"] = round(c.overhead, 4)
        return inputs

    @staticmethod
    def _hot_stages(obs: JobObservation, rates: dict[str, StageRates], u: float, look: "Outlook", cfg) -> list[str]:
        """Stages whose capacity the given rates (look.up: the load expected before the next possible rescale)
        push past u of it (look.u_up: the midpoint between the ceiling and 100 %), or whose backlog the spare
        capacity cannot drain in time."""
        hot = []
        for s in obs.stages:
            c = look.caps[s.name]
            cap_now = look.capacity_now(s)
            need = rates[s.name].target_input_rate + s.backlog / cfg.catch_up_duration_s
            queued = (s.backlog > look.now[s.name].target_input_rate * cfg.effective_backlog_tolerance_s
                      and s.backlog / cfg.catch_up_duration_s > (1.0 - look.u_max) * cap_now)
            if c.value > 0 and (need > u * cap_now or queued):
                hot.append(s.name)
        return hot

    def _can_wait(self, obs: JobObservation, look: "Outlook", cfg) -> str:
        """Why a scale-out the forecast calls for may wait for the next evaluation (item 16), or "": while the load
        expected — its trend included — by the time instances added at the next evaluation would carry stays under
        the ceiling; or, with no rising trend and a p99 within WAIT_P99_SHARE of the latency target, while the rate
        measured now stays under the scale-out threshold (only its noise band is over it). On a rising trend the first test
        alone: a ramp then scales out one evaluation before it reaches the ceiling, not two horizons ahead of it,
        and the scale-out sizes for the trend anyway."""
        horizon = cfg.evaluation_interval_s + cfg.restart_time_s  # when instances added at the next one would carry
        if not self._hot_stages(obs, look.rates(obs, horizon), look.u_max, look, cfg):
            return (f"steady: a scale-out can wait: the load expected within {horizon:.0f}s stays under "
                    f"{look.u_max:.0%} of capacity")
        if any(fc.slope_ > 0 for fc in look.forecasts.values()):
            return ""
        if obs.latency_p99_s is not None and obs.latency_p99_s > WAIT_P99_SHARE * cfg.latency_target_s:
            return ""  # the noise band is already reaching the latency: the job runs at its edge
        if not self._hot_stages(obs, look.now, look.u_up, look, cfg):
            return (f"steady: a scale-out can wait: the rate now is under {look.u_up:.0%} of capacity and shows no "
                    f"trend (only its noise band is over; the next evaluation sees whether it holds)")
        return ""

    def _scale_out(self, obs: JobObservation, look: "Outlook", cfg, hot: list[str], pause_s: float = 0.0
                   ) -> tuple[dict[str, int], list[str]]:
        """One step for the whole graph: every stage gets what the planned load needs (the pause is paid anyway)."""
        plan = self._plan(obs, look.size, look.caps, cfg, look.u_max, lambda s: cfg.min_parallelism,
                          lambda s: stage_bound(s.max_parallelism, cfg), floor_of=lambda s: int(s.parallelism),
                          pause_s=pause_s, queued_of=lambda s: self._queue_ahead(s, look, cfg), plateau=True)
        parts = []
        for s in obs.stages:
            p, new = int(s.parallelism), plan[s.name]
            if new > p:
                back = f" + backlog {fmt_count(s.backlog)}" if s.backlog > 0 else ""
                why = "" if s.name in hot else " (with the others)"
                cap_now = look.capacity_now(s)
                parts.append(f"scale out {s.name} {p}→{new}{why}: capacity {fmt_rate(cap_now)} at "
                             f"{look.u_up:.0%} cannot carry {fmt_rate(look.up[s.name].target_input_rate)} "
                             f"expected within {look.h_up:.0f}s{back}{_hot_key_note(s, look)}")
        return plan, parts

    @staticmethod
    def _at_bounds(obs: JobObservation, look: "Outlook", cfg, hot: list[str]) -> str:
        """Why a scale-out the load asks for adds nothing, when that is the bounds (else ""): hot stages at their max
        parallelism (the policy's or the stage's own) or, with a hot key, where more instances add almost nothing
        (`plateau_parallelism`); the hot stages before them; those after them that carry what they pass (item 20)."""
        bound = {n: stage_bound(obs.stage(n).max_parallelism, cfg) for n in hot}
        at, skewed = ElastreamPolicy._bound_stages(obs, look, cfg, hot)
        if not at and not skewed:
            return ""
        said = [f"{n} at {_as_much_as_bound(obs.stage(n), bound[n])} cannot carry "
                f"{fmt_rate(look.up[n].target_input_rate)} expected within {look.h_up:.0f}s" for n in at]
        said += [f"{n} cannot carry {fmt_rate(look.up[n].target_input_rate)} expected within {look.h_up:.0f}s at any "
                 f"parallelism{_hot_key_note(obs.stage(n), look)}: {obs.stage(n).parallelism} instances carry "
                 f"{fmt_rate(look.capacity_now(obs.stage(n)))}, {bound[n]} would carry at most "
                 f"{fmt_rate(look.caps[n].carried(bound[n], obs.stage(n).max_parallelism))}" for n in skewed]
        at_max = [d for d in at if int(obs.stage(d).parallelism) >= bound[d]]
        why = {n: "runs at its max parallelism" if any(n in obs.upstream_of(d) for d in at_max)
               else "carries all its max parallelism would" if any(n in obs.upstream_of(d) for d in at)
               else "carries no more at any parallelism" for n in hot}
        said += [f"{n} stays at {obs.stage(n).parallelism}: a stage after it {why[n]}, and more {n} instances would "
                 f"only move the queue there"
                 for n in hot if n not in at + skewed and any(n in obs.upstream_of(d) for d in at + skewed)]
        said += [f"{n} stays at {obs.stage(n).parallelism}: it carries what the stages before it pass at their bounds"
                 for n in hot if n not in at + skewed
                 and not any(n in obs.upstream_of(d) for d in at + skewed)
                 and any(d in obs.upstream_of(n) for d in at + skewed)]
        return at_bounds_reason(said, max_bound=bool(at), hot_key=bool(skewed))

    @staticmethod
    def _bound_stages(obs: JobObservation, look: "Outlook", cfg, hot: list[str]) -> tuple[list[str], list[str]]:
        """The hot stages more instances would not help: at their bound, or where their key groups give the bound
        no more (60 instances over 360 groups carry what 64 do); and those a hot key holds at their plateau
        (`_past_any_parallelism`), said as such unless at their bound."""
        bound = {n: stage_bound(obs.stage(n).max_parallelism, cfg) for n in hot}
        at = [n for n in hot if int(obs.stage(n).parallelism) >= bound[n] or (
            look.caps[n].hot_share <= 0 and _carries_what_bound_would(obs.stage(n), cfg))]
        skewed = [n for n in hot if n not in at and ElastreamPolicy._past_any_parallelism(obs.stage(n), look, cfg,
                                                                                             bound[n])]
        return at, skewed

    @staticmethod
    def _throughput_capped(obs: JobObservation, look: "Outlook", cfg, hot: list[str]) -> bool:
        """Would a scale-out leave the job's throughput where it is (item 20)? When some hot stage carries all its
        bound would, and every other hot stage before it already passes what it carries at its bound, and every one
        after it can carry — with its own queue's drain — what it passes: more instances there would only move the
        queue, and each rescale pauses the whole job (a flash crowd past the bounds took a source 24 → 26 → 28 on
        top of the scale-out to the bound, each pause queueing another few seconds of the bound's throughput)."""
        at, skewed = ElastreamPolicy._bound_stages(obs, look, cfg, hot)
        capped = at + skewed
        if not capped:
            return False
        up = look.up

        def flow(d: str, n: str) -> float:  # what stage d at its bound passes, in stage n's input terms
            s_d = obs.stage(d)
            most = look.caps[d].carried(stage_bound(s_d.max_parallelism, cfg), s_d.max_parallelism)
            return most * up[n].target_input_rate / max(up[d].target_input_rate, 1e-9)

        def held(n: str) -> bool:
            s = obs.stage(n)
            carries = look.u_up * look.capacity_now(s)
            before = [d for d in capped if n in obs.upstream_of(d)]
            after = [d for d in capped if d in obs.upstream_of(n)]
            if before and carries >= max(flow(d, n) for d in before):
                return True  # it passes what the bound stage after it carries (its own queue drains no faster)
            # fed through the tightest bound before it: a chain's (a join of two bounded branches gets their sum)
            return bool(after) and carries >= min(flow(d, n) for d in after) + s.backlog / cfg.catch_up_duration_s
        return all(n in capped or held(n) for n in hot)

    @staticmethod
    def _past_any_parallelism(s, look: "Outlook", cfg, bound: int) -> bool:
        """A hot key's stage at its plateau (`plateau_parallelism`) whose load even its bound would not carry — not
        one hot only for a queue its capacity drains."""
        K, share = s.max_parallelism, look.caps[s.name].hot_share
        return (share > 0 and int(s.parallelism) >= plateau_parallelism(K, share, cfg.min_parallelism, bound)
                and look.caps[s.name].carried(bound, K) * look.u_up < look.up[s.name].target_input_rate)

    def _lasting(self, obs: JobObservation, look: "Outlook", cfg, u: float) -> dict[str, int]:
        """Per stage, what a scale-out's planned load asks for at utilization u, without any queue to drain or pause
        to catch up."""
        return self._plan(obs, look.size, look.caps, cfg, u, lambda s: cfg.min_parallelism,
                          lambda s: stage_bound(s.max_parallelism, cfg), queued_of=lambda s: 0.0)

    def _drained(self, obs: JobObservation, look: "Outlook", cfg, ctx: PolicyContext
                 ) -> tuple[dict[str, int], list[str]]:
        """Item 19, asked while the scale-out is held (`_scale_out_held`, which keeps capacity for its load, not its
        queue) and caught up: once its load has held for `elastream_min_saving_age_s` (a spike's does not: its end
        takes one scale-in, not two), the instances it added only for the queue go, down to what the load asked for
        then or asks for now (`_lasting`), if that saves `elastream_min_saving_floor` — with no rescale in between."""
        kept = ctx.memory.get("drain_plan")
        current = obs.parallelism
        if (not kept or ctx.last_rescale_at is None or abs(ctx.last_rescale_at - kept[0]) > 1.0
                or ctx.now - kept[0] < cfg.elastream_min_saving_age_s):
            return dict(current), []
        u_in = look.u_in  # as a scale-in plans: room before the next scale-out
        load_now = self._lasting(obs, look, cfg, u_in)
        plan = {n: min(current[n], max(kept[1].get(n, 0), load_now[n])) for n in current}
        saved = sum(current[n] - plan[n] for n in plan)
        if saved < max(1.0, cfg.elastream_min_saving_floor * sum(current.values())):
            return dict(current), []
        parts = [f"scale in {n} {current[n]}→{plan[n]}: the queue the scale-out drained is gone; "
                 f"{fmt_rate(look.size[n].target_input_rate)} needs {plan[n]}"
                 for n in plan if plan[n] < current[n]]
        return plan, parts

    @staticmethod
    def _queue_ahead(s, look: "Outlook", cfg) -> float:
        """The queue a scale-out must drain: the queue now plus its growth over `elastream_queue_lead_s` — the
        scrapes average a step half-seen, and the instances added take a while to carry."""
        growth = max(look.now[s.name].target_input_rate - look.capacity_now(s), 0.0)
        return float(s.backlog or 0.0) + growth * cfg.elastream_queue_lead_s

    @staticmethod
    def _scale_out_held(obs: JobObservation, look: "Outlook", cfg, mem: dict) -> str:
        """Why a scale-in must wait (or ""): within `elastream_scale_out_hold_s` of a scale-out, while every source
        still runs at least at the rate that called for it (`_load_that_scaled_out`), that load has not gone: the
        capacity added (for the trend, for a level recalled) is kept."""
        out = mem.get("scaled_out")
        if not out or cfg.elastream_scale_out_hold_s <= 0 or obs.timestamp - out[0] >= cfg.elastream_scale_out_hold_s:
            return ""
        if all(look.forecasts[n].recent_ >= r for n, r in out[1].items() if n in look.forecasts):
            return (f"steady: the scale-out {obs.timestamp - out[0]:.0f}s ago is kept: the load is still at least "
                    f"where it was then (hold {cfg.elastream_scale_out_hold_s:.0f}s)")
        return ""

    def _scale_in(self, ctx: PolicyContext, look: "Outlook", used: int, rose: bool, inputs: dict, pause_s: float
                  ) -> tuple[dict[str, int], list[str], float | None, str]:
        """(targets, reasons, the scale-down delay asked for, why a worthwhile scale-in waits)."""
        obs, cfg = ctx.observation, ctx.config
        current = obs.parallelism
        u_in = look.u_in

        def plan_for(rates: dict[str, StageRates]) -> dict[str, int]:  # a scale-in's plan, never above the current
            return self._plan(obs, rates, look.caps, cfg, u_in, lambda s: cfg.min_parallelism,
                              lambda s: int(s.parallelism), pause_s=pause_s)

        season = look.season or {}
        planned, why = (look.rates(obs, look.h_up, optimistic=True, at_least=season) if season else look.down), ""
        plan = plan_for(planned)
        saved = sum(current[n] - plan[n] for n in plan)
        if saved < max(1.0, cfg.elastream_min_saving * sum(current.values())):
            # a smaller one that still carries every level recalled that this one carries, wanted long enough, may
            # save less
            carried = self._carried_recall(obs, look, cfg)
            planned = look.rates(obs, look.h_up, optimistic=True,
                                 at_least={n: max(carried.get(n, 0.0), season.get(n, 0.0)) for n in carried | season})
            plan = plan_for(planned)
            saved = sum(current[n] - plan[n] for n in plan)
            share = self._min_saving(ctx, saved)
            if saved < max(1.0, share * sum(current.values())):
                return dict(current), [], None, ""
            why = (f" (saves {saved / sum(current.values()):.0%}: under {cfg.elastream_min_saving:.0%}, but wanted for "
                   f"{obs.timestamp - ctx.memory['scale_in_wanted_since']:.0f}s and it carries every level of the last "
                   f"{cfg.elastream_recall_s / 3600:.0f}h that this one carries)")
        # a load that rose within the hour may rise again: keep the last rescales of the budget for it — unless a
        # scale-in undoes the last scale-out, its load gone, and saves half the job (_undo_plan)
        reserved = rose and cfg.max_rescales_per_hour - used <= cfg.elastream_scale_out_reserve
        undo = self._undo_plan(obs, look, cfg, plan, ctx.memory) if reserved else None
        if undo is not None:
            plan = undo
            saved = sum(current[n] - plan[n] for n in plan)
        elif reserved:
            return dict(current), [], None, (
                f"steady: a scale-in saving {saved:.0f} instances waits: {used} of the hour's "
                f"{cfg.max_rescales_per_hour} rescales used and the load rose within the hour; the last is kept "
                f"for a scale-out")
        later = self._fall_wait(obs, look, cfg, current, saved, plan_for)
        delay = None if later else self._confident_delay(look, cfg, plan, plan_for)
        later = later or self._spell_wait(obs, look, cfg, plan, saved, delay)
        if later:
            return dict(current), [], None, later
        if delay is not None:
            inputs["confident_scale_in"] = 1.0
        parts = [f"scale in {s.name} {int(s.parallelism)}→{plan[s.name]}: "
                 f"{fmt_rate(planned[s.name].target_input_rate)} expected within {look.h_up:.0f}s needs "
                 f"{plan[s.name]} at {u_in:.0%} of {fmt_rate(look.caps[s.name].value)}/instance"
                 f"{_hot_key_carried(s, look, plan[s.name])}"
                 for s in obs.stages if plan[s.name] < int(s.parallelism)]
        if reserved:
            why += (f" (a rescale kept for a scale-out goes: it undoes the last scale-out, no stage below where it "
                    f"was before it, saves {saved / sum(current.values()):.0%} of the job, and the load has not come "
                    f"and gone within {cfg.elastream_trend_window_s:.0f}s)")
        if why:
            parts[-1] += why
        return plan, parts, delay, ""

    def _undo_plan(self, obs: JobObservation, look: "Outlook", cfg, plan: dict[str, int], mem: dict
                   ) -> dict[str, int] | None:
        """The scale-in that may spend the rescale item 10 keeps for a scale-out, or None: one that undoes the last
        scale-out — no stage below where it was before it, a job the load ran on — and still saves at least
        `RESERVE_SPEND_SAVING` of the job, while within the trend window the load has not come back over what the
        smaller job carries after a low spell of at most `elastream_low_spell_max_s` (item 21's on/off pattern). A job
        twice too large — a spike's scale-out left standing when the spikes' pairs spent the hour's budget — costs more
        in the minutes until a rescale frees than the reserve saves, unless the load comes and goes. Only once the load
        that called for the scale-out has gone (`_load_gone`): a scale-in planned on a wrong capacity would otherwise
        leave the job short with no rescale left."""
        before, current = mem.get("before_scale_out"), obs.parallelism
        if not before:
            return None
        if not self._load_gone(look, mem):
            return None
        undo = {n: min(current[n], max(plan[n], int(before.get(n, current[n])))) for n in plan}
        if sum(current[n] - undo[n] for n in undo) < RESERVE_SPEND_SAVING * sum(current.values()):
            return None
        spells, _ = self._low_spells(obs, look, undo)
        return None if any(x <= cfg.elastream_low_spell_max_s for x in spells) else undo

    @staticmethod
    def _load_gone(look: "Outlook", mem: dict) -> bool:
        """Has the load that called for the last scale-out gone: is every source's level back below the midpoint
        between where it ran in the `UNDO_LOOKBACK_S` before the scale-out (the trend window's scrapes, not the one that
        called for it) and the rate that called for it (`_load_that_scaled_out`)? A spike's has; a step's has not."""
        out = mem.get("scaled_out")
        if not out or not look.history:
            return False
        before = [r for t, r in look.history if out[0] - UNDO_LOOKBACK_S <= t < out[0] - 1.0][:-1]
        for n, fc in look.forecasts.items():
            ys = sorted(r[n] for r in before if n in r)
            if not ys or fc.recent_ > 0.5 * (ys[len(ys) // 2] + out[1].get(n, 0.0)):
                return False
        return True

    @staticmethod
    def _confident_delay(look: "Outlook", cfg, plan: dict[str, int], plan_for) -> float | None:
        """`elastream_confident_scale_down_delay_s` for a confident scale-in, else None (the guards' default delay):
        an established forecast with no upward trend, and the smaller job also carries the pessimistic forecast
        (the last scrape, its noise band, any trend)."""
        safe = plan_for(look.safe)
        if all(fc.slope_ <= 0 for fc in look.forecasts.values()) and all(safe[n] <= plan[n] for n in plan):
            return cfg.elastream_confident_scale_down_delay_s
        return None

    @staticmethod
    def _low_spells(obs: JobObservation, look: "Outlook", plan: dict[str, int]) -> tuple[list[float], float | None]:
        """(the low spells the load came back from, how long the current one has lasted — or None), over the trend
        window, below what the planned (smaller) job carries at the ceiling (`forecast.low_spells`)."""
        # the smaller job's capacity at the ceiling in each source's terms (look.down gives the stages' ratios)
        factor = min([look.caps[s.name].carried(plan[s.name], s.max_parallelism) * look.u_max
                      / look.down[s.name].target_input_rate
                      for s in obs.stages if look.down[s.name].target_input_rate > 0], default=math.inf)
        over = {n: factor * look.down[n].target_input_rate for n in look.forecasts}
        history = look.history or []
        if not history:
            return [], None
        high = [any(r.get(n, 0.0) > level for n, level in over.items()) for _, r in history]
        return low_spells([t for t, _ in history], high)

    def _spell_wait(self, obs: JobObservation, look: "Outlook", cfg, plan: dict[str, int], saved: float,
                    delay: float | None) -> str:
        """Why a worthwhile scale-in waits (item 21), or "": within the trend window the load has fallen below what
        the smaller job carries and come back over it after a low spell of at most `elastream_low_spell_max_s`, and
        this low spell, by the time the scale-in would be realized (after its scale-down delay), is still shorter
        than the longest of those: on/off bursts then cost no rescale pair per gap. A load over the smaller job's
        capacity at the ceiling is over it; spells longer than the limit are worth their pair of rescales. A scale-down
        delay the user set is their word on how long a low load must last, as for the confident delay: no wait then."""
        if cfg.elastream_low_spell_max_s <= 0 or cfg.scale_down_delay_s is not None:
            return ""
        spells, current = self._low_spells(obs, look, plan)
        longest = max([x for x in spells if x <= cfg.elastream_low_spell_max_s], default=0.0)
        realized = delay if delay is not None else cfg.effective_scale_down_delay_s
        if current is None or current + realized >= longest:
            return ""
        return (f"steady: a scale-in saving {saved:.0f} instances waits: within {cfg.elastream_trend_window_s:.0f}s "
                f"the load came back over what the smaller job carries after {longest:.0f}s below it, and it has "
                f"been below for {current:.0f}s")

    def _carried_recall(self, obs: JobObservation, look: "Outlook", cfg) -> dict[str, float]:
        """Per source, the highest level recalled (item 13) that the current job carries without a scale-out. A level
        over it — a flash crowd's — needs a scale-out from this job as from a smaller one: holding every instance
        for it would keep a job a few instances too large for hours after the crowd, to save no rescale."""
        out = {}
        for name, levels in (look.levels or {}).items():
            for level in sorted(set(levels), reverse=True):
                rates = look.rates(obs, look.h_up, optimistic=True, at_least={name: level})
                plan = self._plan(obs, rates, look.caps, cfg, look.u_up, lambda s: cfg.min_parallelism,
                                  lambda s: stage_bound(s.max_parallelism, cfg))
                if all(plan[s.name] <= int(s.parallelism) for s in obs.stages):
                    out[name] = level
                    break
        return out

    @staticmethod
    def _min_saving(ctx: PolicyContext, saved: float) -> float:
        """The share of instances a scale-in must save: `elastream_min_saving`, less once a scale-in has been wanted
        for longer than `elastream_min_saving_age_s` (× that / how long), down to `elastream_min_saving_floor`.
        Wanted since the first evaluation one saved an instance, with no scale-out wanted, no queue (propose()) and
        no rescale since: an evaluation the noise's peak leaves with nothing to save does not end the wish."""
        cfg, mem, now = ctx.config, ctx.memory, ctx.observation.timestamp
        if cfg.elastream_min_saving_age_s <= 0:
            return cfg.elastream_min_saving
        since = mem.get("scale_in_wanted_since")
        if since is None or (ctx.last_rescale_at is not None and ctx.last_rescale_at > since):
            since = now if saved >= 1.0 else None
        mem["scale_in_wanted_since"] = since
        age = now - since if since is not None else 0.0
        if age <= cfg.elastream_min_saving_age_s:
            return cfg.elastream_min_saving
        return max(cfg.elastream_min_saving_floor, cfg.elastream_min_saving * cfg.elastream_min_saving_age_s / age)

    @staticmethod
    def _fall_wait(obs: JobObservation, look: "Outlook", cfg, current: dict[str, int], saved: float, plan_for) -> str:
        """Why a worthwhile scale-in waits (item 17), or "": a source's trend is down, seen over at least half the
        trend window (a short history — a step just seen — does not qualify), and the scale-in the trend promises
        within `elastream_fall_wait_s` saves at least `elastream_fall_gain` × this one's instances. Self-limiting: as
        the load falls, this one's saving grows and the promised one's lead shrinks."""
        if cfg.elastream_fall_wait_s <= 0 or not any(
                fc.slope_ < 0 and fc.span_ >= cfg.elastream_trend_window_s / 2 for fc in look.forecasts.values()):
            return ""
        later = plan_for(look.rates_after_fall(obs, cfg.elastream_fall_wait_s))
        saved_later = sum(current[n] - later[n] for n in later)
        if saved_later < cfg.elastream_fall_gain * saved:
            return ""
        return (f"steady: a scale-in saving {saved:.0f} instances waits: the load falls, and within "
                f"{cfg.elastream_fall_wait_s:.0f}s one would save {saved_later:.0f}")

    @staticmethod
    def _recurring_bottleneck(ctx: PolicyContext, inputs: dict) -> tuple[dict[str, int], str] | None:
        """Me-Stream's threshold detection as an extra trigger: its worst recurring bottleneck gets one more."""
        from elasticity.policies.mestream import MeStreamPolicy

        obs, current = ctx.observation, ctx.observation.parallelism
        ms = MeStreamPolicy().propose(ctx)
        if ms.hold or not any(ms.targets[n] > current[n] for n in ms.targets):
            return None
        worst = max(ms.targets, key=lambda n: ms.inputs.get(f"{n}.bottleneck_level", 0.0))
        p, K = current[worst], obs.stage(worst).max_parallelism
        bound = stage_bound(K, ctx.config)
        # the next parallelism that holds fewer key groups an instance: 52 → 53 over 360 groups adds nothing
        more = next((q for q in range(p + 1, bound + 1) if effective_parallelism(q, K) > effective_parallelism(p, K)),
                    None)
        if more is None:
            return None
        targets = dict(current)
        targets[worst] = more
        inputs.update(ms.inputs)
        return targets, f"scale out {worst} {p}→{targets[worst]}: recurring latency bottleneck ({ms.reason})"

    @staticmethod
    def _bursts_kept(look: "Outlook") -> list[str]:
        """Say so when the bursts remembered, not the forecast, set a source's planned rate."""
        held = {n: round(b, 2) for n, b in look.bursts.items()
                if look.forecasts[n].recent_ * b * look.u_max > look.forecasts[n].peak(look.horizon(look.h_up), look.z)}
        if not held:
            return []
        return ["keeping capacity for the bursts seen: " + ", ".join(f"{n} ×{b}" for n, b in held.items())]


def _hot_key_note(s, look: "Outlook") -> str:
    """What a hot key does to stage s, when one is seen (CapacityEstimate.hot_share): more instances split its
    other keys, never that one."""
    share = look.caps[s.name].hot_share
    if share <= 0:
        return ""
    busiest = (f", its busiest instance {min(s.busy_fraction_max, 1.0):.0%} busy" if s.busy_fraction_max is not None
               else "")
    return (f" (a hot key: one key brings {share:.0%} of its work{busiest}; more instances share out the other "
            f"keys, never that one)")


def _hot_key_carried(s, look: "Outlook", p: int) -> str:
    """Why p instances of a stage with a hot key carry less than p × their capacity, when one is seen."""
    share = look.caps[s.name].hot_share
    if share <= 0:
        return ""
    return (f" (a hot key brings {share:.0%} of its work: {p} instances carry "
            f"{fmt_rate(look.caps[s.name].carried(p, s.max_parallelism))})")


def _as_much_as_bound(s, bound: int) -> str:
    """How a stage that carries what its bound would says so: "its max parallelism 64", or "60 instances (over 360
    key groups, as much as its max parallelism 64 carries)"."""
    if int(s.parallelism) >= bound:
        return f"its max parallelism {bound}"
    return (f"{s.parallelism} instances (over {s.max_parallelism} key groups, as much as its max parallelism "
            f"{bound} carries)")


def _carries_what_bound_would(s, cfg) -> bool:
    """Does stage s carry all its bound would: at it, or where its key groups give the bound no more
    (`plateau_parallelism`: 60 instances over 360 groups carry what 64 do)?"""
    bound = stage_bound(s.max_parallelism, cfg)
    return int(s.parallelism) >= plateau_parallelism(s.max_parallelism, 0.0, cfg.min_parallelism, bound)


def _flat_out_at_bound(obs: JobObservation, cfg) -> bool:
    """Does a stage run flat out (busy ≥ 90 %) where more instances would carry no more?"""
    return any((s.utilization() or 0.0) >= 0.9 and _carries_what_bound_would(s, cfg) for s in obs.stages)


def _drained_by(s, look: "Outlook") -> float:
    """Records/s that left stage s's queue at full speed (item 18): its capacity — or, for a stage with no busy
    fraction (a Storm spout: its work is the source's), what it passed. Its capacity is unmeasured there (the
    processing rate over a 2 % floor), and a spout's queue growing by 30/s read as a step to 3.8k/s."""
    if s.utilization():
        return look.capacity_now(s)
    return float(s.processing_rate or 0.0)


# item 16's noise-band wait only while p99 uses at most this share of the latency target: past it the noise is already
# reaching the latency (a rise under the noise, 2.2k → 2.3k/s on 2.4k/s of capacity, cost a week 9 s over it)
WAIT_P99_SHARE = 0.4
# a scale-in never plans under this utilization: the hysteresis and the surprise headroom (item 24) are each under 0.5
# and the ceiling may fall to target_utilization, so their sum could otherwise reach 0
MIN_SCALE_IN_UTILIZATION = 0.1
ONSET_MAX_GAIN = 6.0  # a step rate at most this × the window's rise over the level before (τ ≥ Δt / 6)


@dataclass
class Outlook:
    """What one evaluation expects: the ceiling, the source forecasts and bursts, and per stage the rates a
    decision plans for — up: the peak until the next possible rescale (does a stage run hot?); size: what a
    scale-out provisions (a trend: two horizons); down: optimistic, what a scale-in plans for; safe:
    pessimistic, what a confident scale-in must also carry; now: the current rates. caps: per-instance capacity."""

    u_max: float
    u_in: float  # the ceiling a scale-in plans at: u_max − hysteresis − any surprise headroom (item 24)
    caught_up: bool
    forecasts: dict[str, RateForecast]
    bursts: dict[str, float]
    h_up: float
    z: float
    use_forecast: bool
    up: dict[str, StageRates] | None = None
    size: dict[str, StageRates] | None = None
    down: dict[str, StageRates] | None = None
    safe: dict[str, StageRates] | None = None
    now: dict[str, StageRates] | None = None
    caps: dict[str, CapacityEstimate] | None = None
    recall: dict[str, float] | None = None
    levels: dict[str, list[float]] | None = None  # per source, every level recalled (_recall)
    onset: dict[str, float] | None = None  # per source, the rate a step seen part-way implies (_onset)
    history: list | None = None  # [time, {source: rate}] over the trend window
    season: dict[str, float] | None = None  # per source, what it ran at one period ago just ahead (_season)

    @property
    def u_up(self) -> float:
        """A scale-out fires only past the midpoint between the ceiling and 100 %."""
        return (self.u_max + 1.0) / 2.0

    def horizon(self, h: float) -> float:
        return h if self.use_forecast else 0.0

    def capacity_now(self, s) -> float:
        """Records/s stage s carries at full speed with its current parallelism (key groups and a hot key counted)."""
        return self.caps[s.name].carried(int(s.parallelism), s.max_parallelism)

    def rates_after_fall(self, obs: JobObservation, h: float) -> dict[str, StageRates]:
        """Per stage, the rates when each source's trend down goes on for h (RateForecast.after_fall): what a
        scale-in then would plan for."""
        levels = {n: fc.after_fall(h, self.z) for n, fc in self.forecasts.items()}
        return {r.name: r for r in target_rates(obs, levels)}

    def rates(self, obs: JobObservation, h: float, optimistic: bool = False, at_least: dict[str, float] | None = None,
              known_high: dict[str, float] | None = None) -> dict[str, StageRates]:
        """Per stage, the rates when each source runs at its forecast peak within h — or at least at its level ×
        the bursts it showed, at 100 % busy (the rate that, planned at u_max, gives level × burst), and at least
        `at_least` (a recalled level)."""
        peaks = {n: max(fc.peak(self.horizon(h), self.z, optimistic, (known_high or {}).get(n, 0.0)),
                        fc.recent_ * self.bursts[n] * self.u_max,
                        (at_least or {}).get(n, 0.0), (self.onset or {}).get(n, 0.0))
                 for n, fc in self.forecasts.items()}
        return {r.name: r for r in target_rates(obs, peaks)}
