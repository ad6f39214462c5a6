"""Fit the simulator's micro-batch job to a real run: the capacity of one executor, the fixed cost of a batch, how
long added executors take to arrive, how slowly they start, and the pause a rescale causes.

A real run gives its batches (rows, duration, executors registered) and its rescales (when asked, when the executors
were there). The model is the simulator's (elasticity/simulation/job.py):

    batch duration = overhead + (task + rows / service_rate) / executors

(overhead: wall time no executor shortens, like planning and the commit; task: fixed executor work every batch,
like launching tasks and Python workers, which executors share) fitted by a robust linear regression (scikit-learn's HuberRegressor: the first batches of a JVM and a batch that
straddles a rescale are outliers, not the rule) over the *steady* batches: past the first few, with the same executor
count as the batches before them, and not within the warm-up horizon of a scale-out. Then, from what the steady fit
does not explain:
- provision_s: median time from a scale-out's request to its executors being registered;
- warm-up: the share of an added executor's capacity each batch after its arrival implies, fitted to the simulator's
  linear ramp (warmup_capacity at arrival, full speed after warmup_s);
- rescale_pause_s: median excess duration of the batch running when executors arrived or left.

    cal = MicroBatchCalibration().fit(batches, rescales, trigger_s=3.0)
    cal.summary()                                    # {"service_rate": 2790.0, "batch_task_s": 2.4, ...}
    spec = cal.job_spec("wordcount", key_groups=4)   # a JobSpec for the simulator
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.linear_model import HuberRegressor

from elasticity.errors import InputError
from elasticity.simulation.job import JobSpec, StageSpec


@dataclass(frozen=True)
class Batch:
    """One micro-batch of a real run: when it committed (seconds since the load started), its rows, its duration
    and the executors registered when it committed (None if the runner could not tell)."""

    end_s: float
    rows: int
    duration_s: float
    executors: int | None

    @property
    def start_s(self) -> float:
        return self.end_s - self.duration_s


@dataclass(frozen=True)
class Rescale:
    """A realized rescale: asked at t_s (seconds since the load started) from `before` to `after` executors;
    ready_s seconds later the registered count reached `after` (None: never seen during the run)."""

    t_s: float
    before: int
    after: int
    ready_s: float | None


class MicroBatchCalibration:
    """Fits a one-stage micro-batch JobSpec to a real run's batches and rescales (see the module doc).

    After fit(): service_rate_, batch_overhead_s_, batch_task_s_ (0 unless the steady batches ran at two executor
    counts or more: with one, the task work cannot be told from the overhead), capacity_noise_, provision_s_, warmup_capacity_, warmup_s_,
    rescale_pause_s_, and steady_batches_ / warmup_batches_ (how many batches each estimate rests on). An estimate
    with no batch to rest on keeps the simulator's default and is named in `defaulted_`."""

    def __init__(self, skip_first: int = 2, settle_batches: int = 2, warmup_horizon_s: float = 30.0) -> None:
        self.skip_first = skip_first
        self.settle_batches = settle_batches
        self.warmup_horizon_s = warmup_horizon_s

    # --- fit -------------------------------------------------------------------------------------------------
    def fit(self, batches: list[Batch], rescales: list[Rescale], trigger_s: float) -> "MicroBatchCalibration":
        if trigger_s <= 0:
            raise InputError(f"trigger interval must be > 0 s, got {trigger_s}")
        self.trigger_s_ = float(trigger_s)
        self.defaulted_: list[str] = []
        defaults = JobSpec("defaults", [])
        steady = self._steady(batches, rescales)
        self._fit_cost(steady)
        outs = [r for r in rescales if r.after > r.before]
        ready = [r.ready_s for r in outs if r.ready_s is not None]
        self.provision_s_ = float(np.median(ready)) if ready else self._default("provision_s", 0.0)
        self._fit_warmup(batches, outs, defaults)
        excess = self._rescale_excess(batches, rescales)
        self.rescale_pause_s_ = (float(np.median(np.maximum(excess, 0.0))) if excess else
                                 self._default("rescale_pause_s", defaults.rescale_pause_s))
        return self

    def _default(self, name: str, value: float) -> float:
        self.defaulted_.append(name)
        return value

    def _steady(self, batches: list[Batch], rescales: list[Rescale]) -> list[Batch]:
        """Batches that show the job at its registered size: not the JVM's first, not just after a change of
        executors, not while an added executor warms up."""
        arrivals = [r.t_s + r.ready_s for r in rescales if r.after > r.before and r.ready_s is not None]
        steady = []
        for i, b in enumerate(batches):
            before = batches[max(0, i - self.settle_batches):i]
            if (i < self.skip_first or not b.executors or b.rows <= 0 or len(before) < self.settle_batches
                    or any(p.executors != b.executors for p in before)
                    or any(a <= b.start_s < a + self.warmup_horizon_s for a in arrivals)):
                continue
            steady.append(b)
        return steady

    def _fit_cost(self, steady: list[Batch]) -> None:
        if len(steady) < 5:
            raise InputError(f"only {len(steady)} steady batches (need 5): run longer, or at a steadier load")
        rows = np.array([b.rows for b in steady], float)
        executors = np.array([b.executors for b in steady], float)
        y = np.array([b.duration_s for b in steady])
        if np.ptp(rows / executors) <= 0:
            raise InputError("every steady batch had the same rows per executor: the run needs a load that varies "
                             "(a step) to tell the per-record cost from the per-batch cost")
        shared = len(set(executors)) > 1  # the task work shows only as a cost that shrinks with more executors
        x = np.column_stack([rows / executors, 1.0 / executors] if shared else [rows / executors])
        model = HuberRegressor(max_iter=1000).fit(x, y)
        per_record = float(model.coef_[0])
        if per_record <= 0:
            raise InputError("batch durations do not grow with the rows per executor: the job was never loaded "
                             "enough to measure its capacity (raise the load's peak)")
        self.service_rate_ = 1.0 / per_record
        self.batch_task_s_ = max(float(model.coef_[1]), 0.0) if shared else 0.0
        self.batch_overhead_s_ = max(float(model.intercept_), 0.0)
        ratio = y / self.predict_duration(rows, executors)
        self.capacity_noise_ = float(min(np.std(ratio), 0.5))
        self.steady_batches_ = len(steady)

    def _fit_warmup(self, batches: list[Batch], outs: list[Rescale], defaults: JobSpec) -> None:
        """Each batch in the horizon after a scale-out's executors arrived implies the added executors' share
        w = ((task + rows/μ) / (d − overhead) − before) / (after − before); fit the ramp
        w(τ) = c + (1 − c) min(τ/W, 1)."""
        tau, share = [], []
        for r in outs:
            if r.ready_s is None:
                continue
            arrived = r.t_s + r.ready_s
            for b in batches:
                work = b.duration_s - self.batch_overhead_s_
                if b.executors == r.after and arrived <= b.start_s < arrived + self.warmup_horizon_s and work > 0:
                    used = (self.batch_task_s_ + b.rows / self.service_rate_) / work
                    tau.append((b.start_s + b.end_s) / 2 - arrived)
                    share.append(np.clip((used - r.before) / (r.after - r.before), 0.0, 1.5))
        self.warmup_batches_ = len(share)
        if len(share) < 3:
            self.warmup_capacity_ = self._default("warmup_capacity", defaults.warmup_capacity)
            self.warmup_s_ = self._default("warmup_s", defaults.warmup_s)
            return
        tau_a, share_a = np.array(tau), np.array(share)
        grid = [(c, w) for c in np.linspace(0.0, 1.0, 21) for w in np.arange(0.0, self.warmup_horizon_s + 1, 5.0)]
        errors = [float(np.sum((share_a - _ramp(tau_a, c, w)) ** 2)) for c, w in grid]
        self.warmup_capacity_, self.warmup_s_ = (float(v) for v in grid[int(np.argmin(errors))])

    def _rescale_excess(self, batches: list[Batch], rescales: list[Rescale]) -> list[float]:
        """Per rescale: how much longer than the steady fit predicts the batch running at the change took."""
        excess = []
        for r in rescales:
            at = r.t_s + (r.ready_s or 0.0)
            running = [b for b in batches if b.start_s <= at <= b.end_s and b.rows > 0]
            for b in running[:1]:
                predicted = self.predict_duration(np.array([b.rows]), np.array([min(r.before, r.after)]))[0]
                excess.append(b.duration_s - predicted)
        return excess

    # --- use -------------------------------------------------------------------------------------------------
    def predict_duration(self, rows: np.ndarray, executors: np.ndarray) -> np.ndarray:
        """Batch durations the fitted model gives for `rows` read by `executors` executors."""
        work = self.batch_task_s_ + np.asarray(rows, float) / self.service_rate_
        return self.batch_overhead_s_ + work / np.asarray(executors, float)

    def job_spec(self, name: str, key_groups: int, initial_parallelism: int = 1) -> JobSpec:
        """The simulator's job with the fitted figures (one micro-batch stage named "spark")."""
        stage = StageSpec("spark", service_rate=self.service_rate_, key_groups=key_groups,
                          initial_parallelism=initial_parallelism, trigger_interval_s=self.trigger_s_,
                          batch_overhead_s=self.batch_overhead_s_, batch_task_s=self.batch_task_s_)
        return JobSpec(name, [stage], rescale_pause_s=self.rescale_pause_s_, warmup_s=self.warmup_s_,
                       warmup_capacity=self.warmup_capacity_, capacity_noise=self.capacity_noise_,
                       provision_s=self.provision_s_)

    def summary(self) -> dict[str, float | int | list[str]]:
        return {"service_rate": round(self.service_rate_, 1), "batch_overhead_s": round(self.batch_overhead_s_, 3),
                "batch_task_s": round(self.batch_task_s_, 3),
                "trigger_interval_s": self.trigger_s_, "capacity_noise": round(self.capacity_noise_, 3),
                "provision_s": round(self.provision_s_, 1), "warmup_capacity": round(self.warmup_capacity_, 2),
                "warmup_s": round(self.warmup_s_, 1), "rescale_pause_s": round(self.rescale_pause_s_, 2),
                "steady_batches": self.steady_batches_, "warmup_batches": self.warmup_batches_,
                "defaulted": list(self.defaulted_)}


def _ramp(tau: np.ndarray, start: float, length_s: float) -> np.ndarray:
    if length_s <= 0:
        return np.ones_like(tau)
    return start + (1.0 - start) * np.clip(tau / length_s, 0.0, 1.0)
