"""Run a scenario under a policy: the simulated job is the MetricsSource and the Realizer of a JobAutoscaler,
a ManualClock follows simulated time — the same core, through the same ports, as in the operator."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from elasticity.adapters import InMemoryStateStore, ListEventSink, ManualClock
from elasticity.autoscaler import JobAutoscaler
from elasticity.config import PolicyConfig
from elasticity.errors import InputError
from elasticity.model import Decision
from elasticity.policies import REGISTRY, Policy
from elasticity.policies.base import stage_bound
from elasticity.policies.capacity import effective_parallelism
from elasticity.ports import MetricsSource
from elasticity.simulation.job import SimulatedJob, Timeline
from elasticity.simulation.oracle import Oracle
from elasticity.simulation.scenarios import Scenario

POLICIES = ("static", "hpa", "ds2", "mestream", "elastream", "rl", "oracle")
# How a scenario's job is sized at t = 0, the same for every policy (oracle and static included):
# "as-deployed" — each stage carries the first rate at 70 % utilization, as a user sizes a job (the benchmark's
#   criteria use this start); "right-sized" — the parallelism the oracle itself picks for the first step (the
#   least that meets the latency target for the next seconds); reported as a sensitivity run.
STARTS = ("as-deployed", "right-sized")
PROGRESS_REPORTS = 100  # at most this many progress calls per run: cheap next to the steps, fine enough to watch


@dataclass
class SimResult:
    scenario: str
    policy: str
    summary: dict[str, float]
    timeline: Timeline
    stage_names: list[str]
    latency_target_s: float
    decisions: list[Decision] = field(default_factory=list)
    initial_parallelism: list[int] = field(default_factory=list)  # per stage, at t = 0


UNDONE_WITHIN_S = 900.0


def reversals(times, signs, within_s: float = UNDONE_WITHIN_S) -> np.ndarray:
    """Per rescale (its time and its direction, +1 out / −1 in), whether it reversed the one before within
    `within_s` (a scale-out for a burst, given back minutes later; a scale-in the load outran)."""
    times, signs = np.asarray(times, dtype=float), np.asarray(signs)
    flips = (signs[1:] != signs[:-1]) & (np.diff(times) <= within_s)
    return np.concatenate([[False], flips]) if len(signs) else np.zeros(0, dtype=bool)


def undone_rescales(tl: Timeline, within_s: float = UNDONE_WITHIN_S) -> int:
    """Rescales that reversed the one before within `within_s` (`reversals`): the rescales a policy that saw further
    would not have made. Counted on the total parallelism, so a rescale of several stages at once is one."""
    total = tl.parallelism.sum(axis=1)
    at = np.flatnonzero(np.diff(total)) + 1  # steps whose total differs from the step before
    return int(np.sum(reversals(tl.t[at], np.sign(total[at] - total[at - 1]), within_s)))


def summarize(tl: Timeline, dt: float, latency_target_s: float, rescales: int) -> dict[str, float]:
    return {
        "slo_violation_s": float(np.sum(tl.latency_p99 > latency_target_s) * dt),
        "p99_latency_s": round(float(np.percentile(tl.latency_p99, 99)), 3),
        "executor_seconds": float(np.sum(tl.parallelism) * dt),
        "rescales": int(rescales),
        "rescales_undone": undone_rescales(tl),
        "max_backlog": round(float(np.max(tl.backlog.sum(axis=1))), 1),
    }


def _reporter(n_steps: int, progress: Callable[[float], None] | None) -> Callable[[int], None]:
    """report(k) after step k: calls progress(fraction done) every n_steps / PROGRESS_REPORTS steps and at the end."""
    if progress is None:
        return lambda k: None
    every = max(1, -(-n_steps // PROGRESS_REPORTS))

    def report(k: int) -> None:
        if (k + 1) % every == 0 or k + 1 == n_steps:
            progress((k + 1) / n_steps)
    return report


def within_bounds(spec, parallelism: list[int], cfg: PolicyConfig) -> dict[str, int]:
    """Per stage, the parallelism clamped to [min_parallelism, the stage's bound] (stage_bound: the policy's max
    and the stage's key groups)."""
    return {s.name: min(max(int(p), cfg.min_parallelism), stage_bound(s.key_groups, cfg))
            for s, p in zip(spec.stages, parallelism)}


def most_rate_carried(spec, cfg: PolicyConfig) -> float:
    """The job input rate (records/s) the job carries at full speed with every stage at its bound: past it, no
    policy can keep up."""
    return min((s.capacity_per_instance * effective_parallelism(stage_bound(s.key_groups, cfg), s.key_groups,
                                                                s.hot_share) / share
                for s, share in zip(spec.stages, spec.input_shares()) if share > 0), default=float("inf"))


def run(scenario: Scenario, policy: str, config: PolicyConfig | None = None, seed: int | None = None,
        keep_decisions: bool = False, start: str = "as-deployed", agent: Policy | None = None,
        progress: Callable[[float], None] | None = None,
        metrics: Callable[[SimulatedJob], MetricsSource] | None = None) -> SimResult:
    """Simulate `scenario` under `policy`; `agent` runs a policy object in its place (rl training tries
    candidate weights this way); `progress`, if given, is called with the fraction of steps done (0..1), at
    most PROGRESS_REPORTS times; `metrics`, if given, wraps the job's metrics before the autoscaler reads them
    (a scrape older than the evaluation, as Prometheus's is)."""
    if policy not in POLICIES:
        raise InputError(f"unknown policy {policy!r}; valid: {', '.join(POLICIES)}")
    if start not in STARTS:
        raise InputError(f"unknown start {start!r}; valid: {', '.join(STARTS)}")
    cfg = (config or PolicyConfig()).model_copy(update={"algorithm": policy if policy in REGISTRY else "static"})
    spec = scenario.job_spec()
    arrivals = scenario.arrivals(seed)
    job = SimulatedJob(spec, arrivals, dt=scenario.dt, seed=scenario.seed if seed is None else seed,
                       metrics_window_s=cfg.evaluation_interval_s, free_rescales=(policy == "oracle"))
    decisions: list[Decision] = []
    if start == "right-sized":
        job.set_initial_parallelism(Oracle(job, cfg.latency_target_s, cfg.max_parallelism,
                                           cfg.min_parallelism).targets(0))
    else:  # a user deploys within the bounds the job has: a first rate past them starts at the bound
        job.set_initial_parallelism(within_bounds(spec, job.p, cfg))
    initial = list(job.p)
    report = _reporter(job.n, progress)
    if policy == "oracle":
        oracle = Oracle(job, cfg.latency_target_s, cfg.max_parallelism, cfg.min_parallelism)
        for k in range(job.n):
            job.set_parallelism(oracle.targets(k))
            job.step()
            report(k)
        rescales = job.rescales
    else:
        clock = ManualClock(0.0)
        scaler = JobAutoscaler(spec.name, cfg, metrics=metrics(job) if metrics else job, realizer=job,
                               store=InMemoryStateStore(), events=ListEventSink(), clock=clock, policy=agent)
        every = max(1, int(round(cfg.evaluation_interval_s / scenario.dt)))
        for k in range(job.n):
            job.step()
            if (k + 1) % every == 0 and k + 1 < job.n:
                clock.t = job.now
                d = scaler.scale()
                if keep_decisions:
                    decisions.append(d)
            report(k)
        rescales = job.rescales
    summary = summarize(job.tl, scenario.dt, cfg.latency_target_s, rescales)
    return SimResult(scenario.name, policy, summary, job.tl, [s.name for s in spec.stages], cfg.latency_target_s,
                     decisions, initial)
