"""PolicyConfig: every knob of the core, with defaults we can justify (see docs/elasticity.md, "Defaults").

Pure pydantic — the Kubernetes ElasticityPolicy maps onto these snake_case names (seconds as floats).
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

ALGORITHMS = ("elastream", "ds2", "mestream", "hpa", "rl", "static")
DEFAULT_SCALE_DOWN_DELAY_S = 600.0


class PolicyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, validate_assignment=True)

    # --- what decides ---------------------------------------------------------------------------------
    algorithm: Literal["elastream", "ds2", "mestream", "hpa", "rl", "static"] = "elastream"
    mode: Literal["auto", "advisor"] = "auto"
    # when to act: "regression" = Me-Stream threshold function on (timestamp, latency);
    # "rate" = busy fraction / rates. None = the algorithm's own (mestream: regression, others: rate).
    detector: Literal["regression", "rate"] | None = None

    # --- targets --------------------------------------------------------------------------------------
    latency_target_s: float = Field(5.0, gt=0)  # end-to-end p99 latency objective
    target_utilization: float = Field(0.7, gt=0, le=1)  # DS2/Flink/HPA target busy fraction
    utilization_boundary: float = Field(0.1, ge=0, lt=1)  # ds2: no change while utilization within target ± this

    # --- cadence and windows --------------------------------------------------------------------------
    evaluation_interval_s: float = Field(30.0, gt=0)
    metrics_window_s: float = Field(300.0, gt=0)
    stale_after_s: float | None = Field(None, gt=0)  # None = 2 × evaluation_interval_s

    # --- guards ---------------------------------------------------------------------------------------
    min_parallelism: int = Field(1, ge=1)
    max_parallelism: int = Field(64, ge=1)
    scale_up_max_step: int | None = Field(None, ge=1)
    scale_down_max_step: int | None = Field(None, ge=1)
    max_scale_down_factor: float = Field(0.6, gt=0, le=1)  # ds2/elastream: one step removes at most 60 %
    stabilization_window_s: float = Field(300.0, ge=0)  # no new rescale this long after the last one
    # scale-down only once wanted this long without a break. None = the policy's default: 600 s, except that
    # elastream may propose `elastream_confident_scale_down_delay_s` for a scale-in its forecast is confident in.
    # A value set here applies to every policy alike.
    scale_down_delay_s: float | None = Field(None, ge=0)
    max_rescales_per_hour: int = Field(6, ge=0)
    backlog_tolerance_s: float | None = Field(None, ge=0)  # catching up = backlog > this many seconds of input
    ineffective_scale_up_threshold: float = Field(0.1, ge=0, le=1)  # gain < 10 % of expected = ineffective
    ineffective_block_s: float = Field(3600.0, ge=0)

    # --- rate-based planning (ds2, elastream) ---------------------------------------------------------
    catch_up_duration_s: float = Field(300.0, gt=0)  # drain a backlog within this
    restart_time_s: float = Field(30.0, ge=0)  # expected pause + warm-up of a rescale (adds catch-up capacity)

    # --- hpa ------------------------------------------------------------------------------------------
    hpa_tolerance: float = Field(0.1, ge=0, lt=1)

    # --- Me-Stream ------------------------------------------------------------------------------------
    phi: float = Field(1.0, gt=0)  # eq. 7 allocation coefficient
    bottleneck_interval_s: float = Field(60.0, gt=0)  # Algorithm 1 recurrence interval
    mestream_accuracy: float = Field(1.0, ge=0)  # effective bottleneck: latency > f(t) + accuracy·RMSE
    mestream_min_recurrences: int = Field(2, ge=1)  # the reference bottleneck "occurs multiple times"
    mestream_magnitude: float = Field(10.0, gt=1)  # same order of magnitude: 1/10 < T/Tr < 10
    mestream_min_training_points: int = Field(3, ge=2)

    # --- elastream ------------------------------------------------------------------------------------
    elastream_max_utilization: float = Field(0.95, gt=0, le=1)  # planning ceiling after noise headroom
    elastream_noise_z: float = Field(2.5, ge=0)  # headroom = z × std of the rate residuals
    elastream_forecast: bool = True
    elastream_trend_window_s: float = Field(1800.0, gt=0)  # history of source rates for trend and noise
    # scale down only to save ≥ this share of instances (0.32: chosen on seeds 0-9, docs/elasticity.md defaults)
    elastream_min_saving: float = Field(0.32, ge=0, lt=1)
    # ... but a smaller job that still carries every level recalled that the current one carries, wanted for longer
    # than this, needs only min saving × this / how long it has been wanted (a low load that has lasted is likely to
    # last: the saving then outweighs the rescale), down to `elastream_min_saving_floor`; 0 = off
    elastream_min_saving_age_s: float = Field(600.0, ge=0)
    elastream_min_saving_floor: float = Field(0.1, ge=0, lt=1)
    elastream_trend_horizon_factor: float = Field(2.0, ge=1)  # a scale-out sizes for this × the up horizon
    elastream_hysteresis: float = Field(0.08, ge=0, lt=0.5)  # a scale-in plans at the ceiling minus this
    # a scale-in is "confident" when the forecast has enough points, no upward trend and the lower parallelism
    # carries the forecast's upper band; it then waits this long instead of the default scale-down delay
    # (only while scale_down_delay_s is unset)
    elastream_confident_scale_down_delay_s: float = Field(120.0, ge=0)
    # a downstream stage carries at least this × what its upstream stages are planned to pass on (their need,
    # not their rounded-up capacity): spare capacity to drain a burst's queue through the whole pipeline
    elastream_burst_coverage: float = Field(1.05, ge=0, le=2)
    # per-instance capacity by regression of busy fraction on per-instance processed rate (intercept = fixed
    # per-batch overhead): robust to micro-batch engines whose busy fraction does not fall with the load
    elastream_capacity_regression: bool = True
    # short bursts seen (a rate two scrapes sustain above the median around them) are provisioned for at 100 % busy:
    elastream_burst_window_s: float = Field(600.0, gt=0)  # the neighbourhood a burst stands above (a step does not)
    elastream_burst_memory_s: float = Field(0.0, ge=0)  # a burst's excess decays with this time constant; 0 = off
    elastream_burst_min_excess: float = Field(0.05, ge=0)  # smaller excursions are the noise headroom's
    # ... and at most this factor over the level (a one-off crowd of ×4 is not held as ×3.4 for an hour); 0 = no cap
    elastream_burst_max_factor: float = Field(0.0, ge=0)
    # ... and only for the n-th largest burst episode remembered (1: the largest; 3: bursts that recur at least thrice)
    elastream_burst_recurrence: int = Field(1, ge=1)
    # a backlog worth more than the latency target (a surge, a long pause) is planned to drain within this instead
    # of catch_up_duration_s: every second it lasts is an SLO violation
    elastream_slo_catch_up_s: float = Field(30.0, gt=0)
    # ... adding at most this × the stage's rate (a crowd's queue of minutes is drained more slowly, not by a job
    # several times the size, held as long as the crowd)
    elastream_slo_drain_share: float = Field(0.5, gt=0)
    # a scale-out may follow the last rescale after this long (not the stabilization window) when that rescale
    # left a queue past the backlog tolerance that still grows: it was too small (a step read half-way); 0 = off
    elastream_follow_up_s: float = Field(90.0, ge=0)
    # a scale-out sizes for at least the highest level a source sustained within this long (a load that rises again
    # mostly returns where it has been); 0 = off
    elastream_recall_s: float = Field(10800.0, ge=0)
    # no scale-in within this long of a scale-out while every source runs at least at its rate then; 0 = off
    elastream_scale_out_hold_s: float = Field(1800.0, ge=0)
    # after a scale-out within the hour, a scale-in never spends the last this many rescales of the hourly budget
    elastream_scale_out_reserve: int = Field(1, ge=0)
    # a scale-out drains the queue as it will be when the added instances carry: now + its growth for this long
    elastream_queue_lead_s: float = Field(30.0, ge=0)
    # with no rising trend, a scale-out the forecast calls for waits for the next evaluation while that is soon enough:
    # the load expected by then (+ restart time) stays under the ceiling, or the rate now is under the threshold
    elastream_wait_for_load: bool = True
    # on a falling load, a worthwhile scale-in waits while one within this long (the trend extrapolated) would save at
    # least `elastream_fall_gain` × as much: one rescale then does the work of two; 0 = off
    elastream_fall_wait_s: float = Field(600.0, ge=0)
    elastream_fall_gain: float = Field(1.5, gt=1)
    # a queue that grew since the last evaluation by more than this many seconds of a stage's input reveals a step up
    # seen part-way: the plans take the rate it implies, not the window's average (item 18); 0 = off
    elastream_onset_backlog_s: float = Field(1.0, ge=0)
    # a scale-in waits while the load came back over what the smaller job carries, within the trend window, after a low
    # spell longer than the current one (by the time it would be realized) and at most this long (item 21); 0 = off.
    # Only while scale_down_delay_s is unset: a delay the user set says how long a low load must last
    elastream_low_spell_max_s: float = Field(900.0, ge=0)
    # a stage's hot key — read from its busiest instance's busy fraction, when the engine reports one — caps what its
    # instances carry, and a load no parallelism carries is held AtBounds (item 22); false: the mean alone, as DS2
    elastream_hot_key: bool = True
    # an accelerating rise: the trend is also read over this last stretch, from its first differences, when most of
    # them rise (item 2); 0 = the trend window's Theil–Sen slope alone
    elastream_recent_trend_s: float = Field(600.0, ge=0)
    # a load that repeats (item 23): per-bucket mean source rates kept this long (0 = off); once a period shows in them,
    # a scale-in plans for at least what the load did one period ago within the next `elastream_season_ahead_s`
    elastream_season_s: float = Field(0.0, ge=0)
    elastream_season_ahead_s: float = Field(600.0, ge=0)
    elastream_season_bucket_s: float = Field(120.0, gt=0)
    elastream_season_min_corr: float = Field(0.6, gt=0, le=1)
    # a load that outran a calm job (caught up, p99 within the target) and broke the latency target is a surprise; once
    # surprises recur (at least `elastream_surprise_recurrence` episodes within `elastream_surprise_memory_s`), a
    # scale-in plans this much further under the ceiling (item 24); 0 = off
    elastream_surprise_headroom: float = Field(0.0, ge=0, lt=0.5)
    elastream_surprise_memory_s: float = Field(10800.0, gt=0)
    elastream_surprise_recurrence: int = Field(2, ge=1)

    @field_validator("elastream_burst_max_factor")
    @classmethod
    def _a_cap_is_over_the_level(cls, cap: float) -> float:
        if 0 < cap < 1:
            raise ValueError(f"{cap} is under the level: a burst factor is at least 1 (0 = no cap)")
        return cap

    @model_validator(mode="after")
    def _check(self) -> "PolicyConfig":
        if self.min_parallelism > self.max_parallelism:
            raise ValueError(f"min_parallelism {self.min_parallelism} > max_parallelism {self.max_parallelism}")
        return self

    # derived values ------------------------------------------------------------------------------------
    @property
    def effective_detector(self) -> str:
        if self.detector:
            return self.detector
        return "regression" if self.algorithm == "mestream" else "rate"

    @property
    def effective_stale_after_s(self) -> float:
        return self.stale_after_s if self.stale_after_s is not None else 2.0 * self.evaluation_interval_s

    @property
    def effective_scale_down_delay_s(self) -> float:
        """The scale-down delay every policy gets when nothing more specific applies."""
        return self.scale_down_delay_s if self.scale_down_delay_s is not None else DEFAULT_SCALE_DOWN_DELAY_S

    @property
    def effective_backlog_tolerance_s(self) -> float:
        return self.backlog_tolerance_s if self.backlog_tolerance_s is not None else 0.5 * self.latency_target_s
