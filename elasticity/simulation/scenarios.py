"""The built-in scenarios: one three-stage job (source → enrich → aggregate) under different loads.

The job is sized as a user would deploy it: each stage's initial parallelism carries the scenario's first
rate at 70 % utilization. Key groups (max parallelism) are 360 per stage (a highly composite number: many even splits).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from elasticity.errors import InputError
from elasticity.simulation import loads as L
from elasticity.simulation.job import JobSpec, StageSpec


def default_job(first_rate: float, name: str = "wordcount", pause_s: float = 1.0) -> JobSpec:
    stages = [
        StageSpec("source", service_rate=400.0, selectivity=1.0, base_latency_s=0.05),
        StageSpec("enrich", service_rate=150.0, selectivity=0.5, base_latency_s=0.10),
        StageSpec("aggregate", service_rate=100.0, selectivity=0.1, base_latency_s=0.30),
    ]
    rate = first_rate
    for s in stages:
        s.initial_parallelism = max(1, math.ceil(rate / (s.service_rate * 0.7)))
        rate *= s.selectivity
    return JobSpec(name=name, stages=stages, rescale_pause_s=pause_s)


def microbatch_job(first_rate: float, name: str = "spark-microbatch") -> JobSpec:
    """A Spark Structured Streaming job as the operator sees it: one stage named "executors" whose batches
    (1 s trigger) cost a fixed 0.5 s plus 2 ms per record per executor: 250 records/s per executor, while the
    busy fraction (batch duration / trigger) never falls below 50 %. Sized at 70 % of its true capacity."""
    st = StageSpec("executors", service_rate=500.0, key_groups=64, base_latency_s=1.0,
                   trigger_interval_s=1.0, batch_overhead_s=0.5)
    st.initial_parallelism = max(1, math.ceil(first_rate / (st.capacity_per_instance * 0.7)))
    return JobSpec(name=name, stages=[st])


@dataclass
class Scenario:
    name: str
    description: str
    duration_s: float
    load: L.Load
    noise_sd: float = 0.05
    dt: float = 1.0
    seed: int = 0
    job: JobSpec | None = field(default=None)

    def times(self) -> np.ndarray:
        return np.arange(int(round(self.duration_s / self.dt))) * self.dt

    def arrivals(self, seed: int | None = None) -> np.ndarray:
        base = self.load(self.times())
        return L.noisy(base, self.noise_sd, self.seed if seed is None else seed)

    def job_spec(self) -> JobSpec:
        if self.job is not None:
            return self.job
        return default_job(float(self.load(np.array([0.0]))[0]))


def builtin() -> dict[str, Scenario]:
    """The benchmark's scenarios, at the time scales real loads change on (hours, a day)."""
    h = 3600.0
    return {
        "stationary": Scenario("stationary", "2,000 records/s with 8 % correlated noise; 30 min", 0.5 * h,
                               L.constant(2000), noise_sd=0.08, seed=11),
        "step": Scenario("step", "2,000 → 2,600 records/s at 20 min, back at 90 min; 2 h", 2 * h,
                         L.step(2000, 2600, 20 * 60.0, 90 * 60.0), seed=12),
        "sinusoid": Scenario("sinusoid", "2,500 ± 1,000 records/s, period 6 h; 6 h", 6 * h,
                             L.sinusoid(2500, 1000, 6 * h), seed=13),
        "diurnal": Scenario("diurnal", "one day: night ~900, two peaks ~4,100 records/s, with bursts ×1.1 "
                            "(0.5/h, 1–4 min); 24 h", 24 * h,
                            L.diurnal(2500, 1600, 24 * h, bursts_per_hour=0.5, burst_factor=1.1, seed=14,
                                      duration_s=24 * h), dt=2.0, seed=14),
        "ramp": Scenario("ramp", "1,000 → 5,000 records/s over 2 h, 1 h plateau, back over 2 h; 5 h", 5 * h,
                         L.ramp([(0, 1000), (10 * 60, 1000), (130 * 60, 5000), (190 * 60, 5000),
                                 (290 * 60, 1000)]), seed=15),
        "microbatch": Scenario("microbatch", "a Spark-like micro-batch job (one stage, 1 s trigger, 0.5 s fixed "
                               "cost per batch): 3,000 → 1,000 → 3,000 records/s (period 4 h); 4 h", 4 * h,
                               L.sinusoid(2000, 1000, 4 * h, phase=math.pi / 2), seed=16,
                               job=microbatch_job(3000)),
    }


STORM_REBALANCE_PAUSE_S = 8.5  # median throughput gap of a real Storm 2.8.3 rebalance (bench storm-rebalance)


def stress() -> dict[str, Scenario]:
    """Loads that change faster than the default guards allow anyone to follow (reported separately)."""
    h = 3600.0
    return {
        "bursty-diurnal": Scenario("bursty-diurnal", "the diurnal day with bursts ×1.4 (1/h, 1–4 min); 24 h", 24 * h,
                                   L.diurnal(2500, 1600, 24 * h, bursts_per_hour=1.0, burst_factor=1.4, seed=24,
                                             duration_s=24 * h), dt=2.0, seed=24),
        # the pause is calibrated from real Nimbus rebalances: `elastream bench storm-rebalance` measured the sink's
        # longest gap after the call at 7.2-8.8 s, median 8.4 s (docs/benchmarks.md, storm-rebalance)
        "storm-rebalance": Scenario("storm-rebalance", "the step scenario with an 8.5 s stop-the-world rebalance "
                                    "per rescale (Storm, as measured)", 2 * h,
                                    L.step(2000, 2600, 20 * 60.0, 90 * 60.0), seed=12,
                                    job=default_job(2000, pause_s=STORM_REBALANCE_PAUSE_S)),
        "flash-crowd": Scenario("flash-crowd", "1,500 → 4,000 records/s at 20 min for 50 min; 100 min", 100 * 60.0,
                                L.step(1500, 4000, 20 * 60.0, 70 * 60.0), seed=21),
        "hourly-wave": Scenario("hourly-wave", "2,500 ± 1,500 records/s, period 60 min; 2 h", 2 * h,
                                L.sinusoid(2500, 1500, h), seed=22),
        "hot-key": Scenario("hot-key", "the step scenario with a hot key: 5 % of aggregate's work on one key, so "
                            "its instances carry less than their number (a skewed fields grouping); 2 h", 2 * h,
                            L.step(2000, 2600, 20 * 60.0, 90 * 60.0), seed=12, job=hot_key_job(2000, 0.05)),
    }


def hot_key_job(first_rate: float, hot_share: float) -> JobSpec:
    """The default job whose last stage (aggregate, keyed) has one key bringing `hot_share` of its work, deployed as a
    user who does not know it would: each stage at 70 % of its first rate by its instance count."""
    job = default_job(first_rate, name="hot-key")
    job.stages[-1].hot_share = hot_share
    return job


def get_scenario(name: str) -> Scenario:
    """A built-in or stress scenario by name, or a broad-suite family drawn from a seed (FAMILY-SEED: web-day-3)."""
    from elasticity.simulation.families import FAMILIES, family_of  # families build on this module

    sc = {**builtin(), **stress()}
    if name in sc:
        return sc[name]
    family = family_of(name)
    if family in FAMILIES:
        return FAMILIES[family](int(name.rpartition("-")[2]))
    raise InputError(f"unknown scenario {name!r}; valid: {', '.join(sc)}, or a family drawn from a seed as "
                     f"FAMILY-SEED (e.g. {next(iter(FAMILIES))}-3) with FAMILY one of {', '.join(FAMILIES)}")


def with_latency_model(sc: Scenario, model: str) -> Scenario:
    """The scenario with its job's queueing delay modelled as `model` (JobSpec.latency_model)."""
    if model == sc.job_spec().latency_model:
        return sc
    return dataclasses.replace(sc, job=dataclasses.replace(sc.job_spec(), latency_model=model))


def from_trace(path: str, noise_sd: float = 0.0) -> Scenario:
    tr = L.read_trace(path)
    dt = 1.0 if tr.duration_s >= 60 else max(tr.duration_s / 60.0, 1e-3)
    return Scenario(f"trace:{tr.path}", f"CSV trace {tr.path} ({tr.duration_s:.0f}s)", tr.duration_s + dt, tr,
                    noise_sd=noise_sd, dt=dt)
