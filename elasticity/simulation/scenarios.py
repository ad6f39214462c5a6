"""The built-in scenarios: one three-stage job (source → enrich → aggregate) under different loads.

The job is sized as a user would deploy it: each stage's initial parallelism carries the scenario's first
rate at 70 % utilization. Key groups (max parallelism) are 360 per stage (a highly composite number: many even splits).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from elasticity.errors import InputError
from elasticity.simulation import loads as L
from elasticity.simulation.job import JobSpec, StageSpec


def default_job(first_rate: float, name: str = "wordcount", pause_s: float = 5.0) -> JobSpec:
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
    h = 3600.0
    return {
        "stationary": Scenario("stationary", "2,000 records/s with 8 % correlated noise, 30 min", 0.5 * h,
                               L.constant(2000), noise_sd=0.08, seed=11),
        "step": Scenario("step", "2,000 → 3,200 records/s at 20 min, back at 70 min; 100 min", 100 * 60.0,
                         L.step(2000, 3200, 20 * 60.0, 70 * 60.0), seed=12),
        "sinusoid": Scenario("sinusoid", "2,500 ± 1,500 records/s, period 60 min; 2 h", 2 * h,
                             L.sinusoid(2500, 1500, h), seed=13),
        "diurnal": Scenario("diurnal", "a day compressed into 4 h (night 800, two peaks ~4,200 records/s) "
                            "with bursts ×1.5 (1/h, 1–4 min)", 4 * h,
                            L.diurnal(2500, 1700, 4 * h, bursts_per_hour=1.0, burst_factor=1.5, seed=14,
                                      duration_s=4 * h), seed=14),
        "ramp": Scenario("ramp", "1,000 → 5,000 records/s over 50 min, 20 min plateau, back over 40 min; 2 h",
                         2 * h, L.ramp([(0, 1000), (10 * 60, 1000), (60 * 60, 5000), (80 * 60, 5000),
                                        (120 * 60, 1000)]), seed=15),
    }


def get_scenario(name: str) -> Scenario:
    sc = builtin()
    if name not in sc:
        raise InputError(f"unknown scenario {name!r}; valid: {', '.join(sc)}")
    return sc[name]


def from_trace(path: str, noise_sd: float = 0.0) -> Scenario:
    tr = L.read_trace(path)
    dt = 1.0 if tr.duration_s >= 60 else max(tr.duration_s / 60.0, 1e-3)
    return Scenario(f"trace:{path}", f"CSV trace {path} ({tr.duration_s:.0f}s)", tr.duration_s + dt, tr,
                    noise_sd=noise_sd, dt=dt)
