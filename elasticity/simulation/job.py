"""A discrete-time fluid model of a streaming job: a chain of stages with queues.

Per step of dt seconds, stage i receives records (the load for the first stage, the previous stage's output
otherwise), processes up to its capacity  μ_i × eff(p_i, K_i) × noise × warm-up  (0 during a rescale pause),
queues the rest, and emits processed × selectivity. eff(p, K) = K / ceil(K/p): the busiest of p instances
holds ceil(K/p) of the K key groups (the stage's max parallelism), so unaligned parallelism wastes capacity; a hot
key (`hot_share` of the work on one key) lowers it further (capacity.effective_parallelism).

Latency of a stage = base latency + backlog drain time (queue / capacity, plus what remains of a pause) + the
M/M/1 sojourn of the busiest instance at utilization ρ: mean 1/(μ(1−ρ)), p50 ln2/(μ(1−ρ)), p99 ln100/(μ(1−ρ));
end-to-end figures add the stages, plus what remains of a pause once (a stop-the-world pause delays a record
once, not once per stage it will traverse). A rescale pauses the whole job for `rescale_pause_s` (1 s by default: the
operator rescales in place — Spark executors join or leave a running application; a Storm rebalance is slower,
see the `storm-rebalance` stress scenario), then the *added* instances ramp linearly from `warmup_capacity` to
full speed over `warmup_s` (JIT, caches, state loading).

Micro-batch engines (Spark Structured Streaming): a stage with `trigger_interval_s` set runs batches at least one
trigger apart; a batch reads everything queued (at least one trigger's arrivals) and lasts a FIXED overhead
`batch_overhead_s` (planning, commit: wall time) plus `batch_task_s` of fixed task work the instances share (task
launch, Python workers, shuffle set-up) plus the records' processing time: D = overhead + (task + rows/μ) / eff.
Under a backlog batches run back to back and grow, so the fixed costs weigh less: over a period P = max(trigger, D)
the capacity is μ × (eff × (1 − overhead/P) − task/P) — μ × eff × (1 − overhead/trigger) while a batch fits in
a trigger. A record waits for the next batch to start (uniformly over P; p99 0.99 P), then for it to commit (D): that
replaces the record-at-a-time drain and M/M/1 terms. The reported busy fraction is batch duration / trigger: it does
not fall in proportion to the load, so DS2's "true processing rate = processing rate / busy fraction"
underestimates what the stage can do.
`provision_s`: added instances do nothing for this long after a rescale (an executor JVM starting), then warm up.
elasticity/simulation/calibration.py fits these figures to a real run.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from elasticity.model import JobObservation, StageMetrics
from elasticity.policies.capacity import effective_parallelism

LN2, LN100 = math.log(2.0), math.log(100.0)
LATENCY_MODELS = ("stationary", "transient")
DEFAULT_LATENCY_MODEL = "transient"


@dataclass
class StageSpec:
    name: str
    service_rate: float  # records/s of one instance at 100 % busy
    key_groups: int = 360  # max parallelism: key groups / shuffle partitions / Storm tasks
    selectivity: float = 1.0
    base_latency_s: float = 0.05
    initial_parallelism: int = 1
    trigger_interval_s: float | None = None  # micro-batch engine: one batch per trigger
    batch_overhead_s: float = 0.0  # fixed wall time of every batch (micro-batch engines)
    batch_task_s: float = 0.0  # fixed task work of every batch, in instance-seconds shared by the instances
    hot_share: float = 0.0  # the share of the work one key brings (a hot key): its instance saturates first

    @property
    def overhead_fraction(self) -> float:
        """Share of one trigger a micro-batch stage spends on its fixed costs (0 for a record-at-a-time stage);
        the task work is counted as if one instance did it all (a bound: more instances share it)."""
        if not self.trigger_interval_s:
            return 0.0
        fixed = self.batch_overhead_s + self.batch_task_s
        return min(max(fixed / self.trigger_interval_s, 0.0), 0.95)

    @property
    def capacity_per_instance(self) -> float:
        """Records/s one instance carries at 100 % busy (after the per-batch overhead)."""
        return self.service_rate * (1.0 - self.overhead_fraction)


@dataclass
class JobSpec:
    name: str
    stages: list[StageSpec]
    rescale_pause_s: float = 1.0
    provision_s: float = 0.0  # added instances arrive this long after the pause (then warm up)
    warmup_s: float = 30.0
    warmup_capacity: float = 0.3
    capacity_noise: float = 0.02  # per-step multiplicative std of every stage's capacity
    # how a record-at-a-time stage's queueing delay follows its load (SimulatedJob._transient_sojourn):
    # "transient" (the default since 2026-11-27) — the mean queue of each instance follows the load over the
    # queue's relaxation time (pointwise stationary fluid flow approximation); "stationary" — the M/M/1 sojourn at
    # this step's utilization, as if it had lasted (a second's overload priced as minutes of it)
    latency_model: str = DEFAULT_LATENCY_MODEL

    def input_shares(self) -> list[float]:
        """Per stage, the records it receives per record into the job (the selectivities of the stages before it)."""
        shares, share = [], 1.0
        for s in self.stages:
            shares.append(share)
            share *= s.selectivity
        return shares


@dataclass
class Timeline:
    """Everything that happened, one row per step."""

    t: np.ndarray
    arrivals: np.ndarray  # records/s into the job
    parallelism: np.ndarray  # (n, stages)
    backlog: np.ndarray  # (n, stages) records queued at the end of the step
    processed: np.ndarray  # (n, stages) records/s
    latency_mean: np.ndarray
    latency_p50: np.ndarray
    latency_p99: np.ndarray
    rescale_times: list[float] = field(default_factory=list)


class SimulatedJob:
    """The job, its metrics (MetricsSource) and its rescale endpoint (Realizer)."""

    def __init__(self, spec: JobSpec, arrivals: np.ndarray, dt: float = 1.0, seed: int = 0,
                 metrics_window_s: float = 30.0, free_rescales: bool = False) -> None:
        self.spec = spec
        self.dt = float(dt)
        self.n = len(arrivals)
        S = len(spec.stages)
        self.S = S
        self.mu = [s.service_rate for s in spec.stages]
        self.trig = [s.trigger_interval_s if s.trigger_interval_s else None for s in spec.stages]
        self.K = [s.key_groups for s in spec.stages]
        self.sel = [s.selectivity for s in spec.stages]
        self.base = [s.base_latency_s for s in spec.stages]
        self.p = [int(s.initial_parallelism) for s in spec.stages]
        self.p_before = list(self.p)
        self._one = [1.0] * len(spec.stages)
        self.hot = [s.hot_share for s in spec.stages]
        self.eff = self._effective(self.p)
        self.Q = [0.0] * S
        self.k = 0  # next step to simulate
        self.pause_until = -1.0
        self.warm_from = -1e18
        self.free = free_rescales
        self.window = max(1, int(round(metrics_window_s / self.dt)))
        rng = np.random.default_rng(seed + 1_000_003)
        self.cap_noise = np.maximum(1.0 + spec.capacity_noise * rng.standard_normal((self.n, S)), 0.1)
        self.tl = Timeline(
            t=np.arange(self.n) * self.dt,
            arrivals=np.asarray(arrivals, dtype=float),
            parallelism=np.zeros((self.n, S), dtype=np.int32),
            backlog=np.zeros((self.n, S)),
            processed=np.zeros((self.n, S)),
            latency_mean=np.zeros(self.n),
            latency_p50=np.zeros(self.n),
            latency_p99=np.zeros(self.n),
        )
        if spec.latency_model not in LATENCY_MODELS:
            raise ValueError(f"unknown latency model {spec.latency_model!r}; valid: {', '.join(LATENCY_MODELS)}")
        self.transient = spec.latency_model == "transient"
        self.in_queue: list[float | None] = [None] * S  # transient model: mean records in one instance's M/M/1 queue
        self._inflow = np.zeros((self.n, S))
        self._full = np.zeros((self.n, S))  # records/s all instances could do if balanced (busy denominator)
        self.rescales = 0

    @property
    def now(self) -> float:
        return self.k * self.dt

    # --- dynamics ------------------------------------------------------------------------------------------
    def step(self) -> None:
        k, dt, t = self.k, self.dt, self.k * self.dt
        paused = t < self.pause_until
        warm = self._one
        if not paused and t < self.warm_from + self.spec.warmup_s:
            if t < self.warm_from:  # the added instances have not arrived yet
                w = 0.0
            else:
                frac = (t - self.warm_from) / self.spec.warmup_s
                w = self.spec.warmup_capacity + (1.0 - self.spec.warmup_capacity) * frac
            # the instances that existed before run at full speed, the added ones at w
            warm = [(p0 + (p - p0) * w) / p if p > p0 else 1.0 for p, p0 in zip(self.p, self.p_before)]
        inflow = self.tl.arrivals[k]
        lm = l50 = l99 = 0.0
        rest = max(self.pause_until - t, 0.0)
        noise = self.cap_noise[k]
        for i in range(self.S):
            q = self.Q[i] + inflow * dt
            if self.trig[i]:  # the instances still arriving or warming up stretch the batch too
                working = self.eff[i] * warm[i]
                batch = self._batch_duration(i, max(q, inflow * self.trig[i]), working)
                nominal = self._batch_capacity(i, batch, working)
                cap = 0.0 if paused else nominal * noise[i]
            else:
                batch, nominal = None, self.mu[i] * self.eff[i]
                cap = 0.0 if paused else nominal * noise[i] * warm[i]
            mu = nominal / self.eff[i]  # records/s of one instance after the per-batch costs
            done = min(q, cap * dt)
            q -= done
            self.Q[i] = q
            rate_done = done / dt
            self._inflow[k, i] = inflow
            self._full[k, i] = 0.0 if paused else self.mu[i] * self.p[i] * noise[i] * warm[i]
            self.tl.processed[k, i] = rate_done
            self.tl.backlog[k, i] = q
            self.tl.parallelism[k, i] = self.p[i]
            rho = min(inflow / (cap if cap > 0 else nominal), 0.99) if nominal > 0 else 0.99
            if batch:  # a record waits for the next batch to start (uniform over one batch), then for it to commit
                wait = max(batch, self.trig[i])
                lm += self.base[i] + 0.5 * wait + batch
                l50 += self.base[i] + 0.5 * wait + batch
                l99 += self.base[i] + 0.99 * wait + batch
            else:
                drain = q / nominal if nominal > 0 else 0.0
                soj = self._transient_sojourn(i, mu, rho, dt) if self.transient else 1.0 / (mu * (1.0 - rho))
                lm += self.base[i] + drain + soj
                l50 += self.base[i] + drain + LN2 * soj
                l99 += self.base[i] + drain + LN100 * soj
            inflow = rate_done * self.sel[i]
        self.tl.latency_mean[k] = lm + rest
        self.tl.latency_p50[k] = l50 + rest
        self.tl.latency_p99[k] = l99 + rest
        self.k += 1

    def _transient_sojourn(self, i: int, mu: float, rho: float, dt: float) -> float:
        """Mean seconds a record spends in one instance of stage i (an M/M/1 queue at utilization rho, service rate
        mu) with the transient model: (1 + x) / mu where x, the mean number in the instance, follows
        dx/dt = λ − mu x / (1 + x) (implicit Euler: stable at any step), so a second or two at rho 0.99 — a catch-up
        after a pause — adds what it queues, not the minutes-long steady state 1 / (mu (1 − rho)) the stationary
        model charges at once."""
        x = self.in_queue[i]
        if x is None:  # the job starts in its steady state
            x = rho / (1.0 - rho)
        else:
            lam = rho * mu
            b = 1.0 - x - dt * lam + dt * mu
            c = x + dt * lam
            x = 0.5 * (-b + math.sqrt(b * b + 4.0 * c))
        self.in_queue[i] = x
        return (1.0 + x) / mu

    def _batch_duration(self, i: int, queued: float, working: float) -> float:
        """Seconds micro-batch stage i takes to read and process `queued` records on `working` instances' worth."""
        st = self.spec.stages[i]
        return st.batch_overhead_s + (st.batch_task_s + queued / self.mu[i]) / max(working, 1e-9)

    def _batch_capacity(self, i: int, duration: float, working: float) -> float:
        """Records/s micro-batch stage i carries in batches of `duration` s (at least one trigger apart): the
        fixed costs are paid once per batch, so longer batches carry more."""
        st, period = self.spec.stages[i], max(duration, self.trig[i])
        return max(self.mu[i] * (working * (1.0 - st.batch_overhead_s / period) - st.batch_task_s / period), 0.0)

    def set_initial_parallelism(self, targets: dict[str, int]) -> None:
        """Size the job before its first step (no rescale, no pause): how the scenario starts."""
        if self.k != 0:
            raise RuntimeError("the initial parallelism can only be set before the first step")
        self.p = [int(targets.get(s.name, p)) for s, p in zip(self.spec.stages, self.p)]
        self.p_before = list(self.p)
        self.eff = self._effective(self.p)

    def _effective(self, parallelism: list[int]) -> list[float]:
        """Per stage, the instances' worth of work its instances do (key groups and a hot key)."""
        return [effective_parallelism(p, k, h) for p, k, h in zip(parallelism, self.K, self.hot)]

    def set_parallelism(self, targets: dict[str, int]) -> bool:
        """Apply new parallelism from the next step; pauses the job unless rescales are free (the oracle)."""
        new = [int(targets.get(s.name, p)) for s, p in zip(self.spec.stages, self.p)]
        if new == self.p:
            return False
        self.p_before = list(self.p)
        self.p = new
        self.eff = self._effective(self.p)
        self.rescales += 1
        if not self.free:
            t = self.now
            self.tl.rescale_times.append(t)
            self.pause_until = t + self.spec.rescale_pause_s
            self.warm_from = self.pause_until + self.spec.provision_s
        return True

    # --- ports -----------------------------------------------------------------------------------------------
    def observe(self, job: str | None = None) -> JobObservation | None:
        """Metrics over the last scrape window (like a Prometheus rate over 30 s), at the current time."""
        if self.k == 0:
            return None
        a, b = max(0, self.k - self.window), self.k
        stages = []
        prev = None
        for i, s in enumerate(self.spec.stages):
            full = self._full[a:b, i]
            proc = self.tl.processed[a:b, i]
            live = full > 0
            busy = float(proc[live].sum() / full[live].sum()) if live.any() and full[live].sum() > 0 else None
            if busy is not None and self.trig[i]:  # micro-batch: batch duration / trigger interval
                fixed = (s.batch_overhead_s + s.batch_task_s / self.eff[i]) / self.trig[i]
                busy = min(fixed + busy, 1.0)
            pr = float(proc[live].mean()) if live.any() else 0.0
            src_rate = float(self.tl.arrivals[a:b].mean()) if i == 0 else float(self._inflow[a:b, i].mean())
            trig = self.trig[i]
            # the busiest instance does 1 / eff of the work (as a Storm exporter reports it); a batch's is the job's
            busiest = None if trig or busy is None else min(busy * self.p[i] / self.eff[i], 1.0)
            stages.append(StageMetrics(
                name=s.name, parallelism=self.p[i], input_rate=src_rate, processing_rate=pr,
                busy_fraction=busy, busy_fraction_max=busiest, backlog=float(self.Q[i]), max_parallelism=s.key_groups,
                output_rate=pr * s.selectivity, upstream=(prev,) if prev else (),
                batch_duration_s=busy * trig if trig and busy is not None else None, trigger_interval_s=trig,
            ))
            prev = s.name
        return JobObservation(
            job=job or self.spec.name, timestamp=self.now, stages=stages,
            latency_avg_s=float(self.tl.latency_mean[a:b].mean()),
            latency_p50_s=float(np.median(self.tl.latency_p50[a:b])),
            latency_p99_s=float(np.percentile(self.tl.latency_p99[a:b], 99)),
        )

    def realize(self, job: str, decision) -> float | None:
        """Apply the targets. Like the Storm engine, report the stall measured on earlier rescales (None before the
        first one has been seen)."""
        measured = self.spec.rescale_pause_s if self.rescales and not self.free else None
        self.set_parallelism(decision.targets)
        return measured
