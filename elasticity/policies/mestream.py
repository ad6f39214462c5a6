"""`mestream`: Me-Stream (seed 000, §3.1-3.2) — bottleneck identification and the parallelism plan.

* eq. 1  T_calc(n_i, c_j) = m(x(c_j)) / p(n_i)         (compute demand / processing power)
* eq. 2  T_comm(n_i, c_j) = m(c_j)/l(i-1,i) + m(c_j)/l(i,i+1)
* eq. 3  T = max(Σ T_calc, Σ T_comm / 2)            (each link is counted twice along a path)
* eq. 4-6 the threshold function f(t) = w·t + b, least squares on (timestamp, average latency)
* Algorithm 1: a latency above f(t) (beyond the accuracy requirement) is an effective bottleneck; the
  reference bottleneck Tr is the largest in the bottleneck interval (default 1 min); when it recurs in the
  interval, stages whose bottleneck time T is of the same order of magnitude (T/Tr < 10) are bottlenecks;
  sorted by T, their rank is the bottleneck level (the worst gets the highest level).
* eq. 7  N'_task = φ · (N_executor + L_bottleneck) / N_executor · N_task.

Mapping onto a stage: m(x(c)) is the stage's pending work (its backlog plus one second of input, in records),
p(n) its true processing rate, so T_calc is the seconds it needs to clear that work — commensurable with
latency as Algorithm 1 requires. T_comm comes from the adapter (comm_time_s) when it measures the network,
else 0. The new parallelism is eq. 7 with N_task = N_executor = current parallelism: ceil(φ·(p + L)).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from elasticity.model import StageMetrics
from elasticity.policies.base import PolicyContext, Proposal, ceil_eps, stage_bound


# --- eq. 1-3 ----------------------------------------------------------------------------------------------
def calc_time(demand: float, power: float) -> float:
    """Eq. 1: T_calc = m(x(c)) / p(n)."""
    return float("inf") if power <= 0 else demand / power


def comm_time(volume: float, link_in: float, link_out: float) -> float:
    """Eq. 2: T_comm = m(c)/l(i-1,i) + m(c)/l(i,i+1) = m(c)(l_in + l_out)/(l_in·l_out)."""
    return volume * (link_in + link_out) / (link_in * link_out)


def bottleneck_time(calc_times: Sequence[float], comm_times: Sequence[float]) -> float:
    """Eq. 3: T = max(Σ T_calc, Σ T_comm / 2)."""
    return max(float(sum(calc_times)), float(sum(comm_times)) / 2.0)


def stage_bottleneck_time(s: StageMetrics) -> float:
    """T of one stage (eq. 3 over the stage alone): calc from the adapter or from rates, comm if measured."""
    if s.calc_time_s is not None and math.isfinite(s.calc_time_s):
        t_calc = float(s.calc_time_s)
    else:
        power = s.true_processing_rate() or 0.0
        t_calc = calc_time(float(s.backlog or 0.0) + float(s.input_rate or 0.0) * 1.0, power)
    t_comm = float(s.comm_time_s) if s.comm_time_s is not None and math.isfinite(s.comm_time_s) else 0.0
    return bottleneck_time([t_calc], [t_comm])


# --- eq. 4-6 ----------------------------------------------------------------------------------------------
def closed_form_fit(t: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Eq. 6: w = Σ y_i (t_i − t̄) / (Σ t_i² − (Σ t_i)²/m),  b = (1/m) Σ (y_i − w t_i)."""
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    m = len(t)
    den = float(np.sum(t * t) - np.sum(t) ** 2 / m)
    w = 0.0 if den == 0 else float(np.sum(y * (t - t.mean())) / den)
    b = float(np.mean(y - w * t))
    return w, b


def mean_error(w: float, b: float, t: Sequence[float], y: Sequence[float]) -> float:
    """Eq. 4/5: e(f, γ) = (1/m) Σ (w t_i + b − γ_i)²."""
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    return float(np.mean((w * t + b - y) ** 2))


class ThresholdFunction:
    """f(t) = w·t + b fitted by least squares (scikit-learn's LinearRegression, or eq. 6 in closed form).

    Timestamps are shifted by their first value before fitting (the fit is the same line; it avoids the
    cancellation of Σt² − (Σt)²/m on epoch seconds)."""

    def __init__(self, method: str = "sklearn") -> None:
        if method not in ("sklearn", "closed_form"):
            raise ValueError(f"unknown method {method!r}")
        self.method = method
        self.w_ = self.b_ = self.mse_ = None
        self.t0_ = 0.0

    def fit(self, t: Sequence[float], y: Sequence[float]) -> "ThresholdFunction":
        t = np.asarray(t, dtype=float)
        y = np.asarray(y, dtype=float)
        if len(t) < 2:
            raise ValueError("the threshold function needs at least two points")
        self.t0_ = float(t[0])
        tc = t - self.t0_
        if self.method == "sklearn":
            from sklearn.linear_model import LinearRegression

            lr = LinearRegression().fit(tc.reshape(-1, 1), y)
            w, b0 = float(lr.coef_[0]), float(lr.intercept_)
        else:
            w, b0 = closed_form_fit(tc, y)
        self.w_ = w
        self.b_ = b0 - w * self.t0_  # back to the caller's time origin
        self.mse_ = mean_error(w, b0, tc, y)
        return self

    def predict(self, t: Sequence[float] | float) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        return self.w_ * (t - self.t0_) + (self.b_ + self.w_ * self.t0_)

    @property
    def rmse_(self) -> float:
        return math.sqrt(self.mse_)


# --- Algorithm 1 and eq. 7 -------------------------------------------------------------------------------
def bottleneck_levels(times: dict[str, float], reference: float, magnitude: float = 10.0) -> dict[str, int]:
    """Stages whose bottleneck time is within an order of magnitude of the reference (1/m < T/Tr < m),
    ranked by T ascending: level 1 the mildest, level k the worst (Algorithm 1, lines 10-15)."""
    if reference <= 0:
        return {}
    picked = [(t, n) for n, t in times.items() if math.isfinite(t) and 1.0 / magnitude < t / reference < magnitude]
    picked.sort()
    return {n: i + 1 for i, (_, n) in enumerate(picked)}


def plan_tasks(n_executor: int, n_task: int, level: int, phi: float = 1.0) -> int:
    """Eq. 7: N'_task = φ·(N_executor + L)/N_executor·N_task (rounded up)."""
    return ceil_eps(phi * (n_executor + level) / n_executor * n_task)


class MeStreamPolicy:
    name = "mestream"
    required_metrics = ("input_rate", "processing_rate", "utilization")

    def __init__(self, fit_method: str = "sklearn") -> None:
        self.fit_method = fit_method

    def detect(self, ctx: PolicyContext) -> tuple[list[float], float, dict[str, float]] | str:
        """Effective bottleneck values in the last interval, the reference Tr, inputs; or why not."""
        cfg = ctx.config
        pts = [(o.timestamp, o.average_latency()) for o in ctx.history if o.average_latency() is not None]
        cut = ctx.now - cfg.bottleneck_interval_s
        train = [(t, y) for t, y in pts if t <= cut]
        recent = [(t, y) for t, y in pts if t > cut]
        if len(train) < cfg.mestream_min_training_points:
            return (f"hold: threshold function has {len(train)} of {cfg.mestream_min_training_points} "
                    "training points")
        f = ThresholdFunction(self.fit_method).fit([t for t, _ in train], [y for _, y in train])
        ys = np.array([y for _, y in train])
        floor = 0.01 * float(np.mean(ys)) + 1e-3  # a flat training set must not flag every wiggle
        tol = cfg.mestream_accuracy * f.rmse_ + floor
        effective = [y for t, y in recent if y - float(f.predict(t)) > tol]
        inputs = {"threshold.w": f.w_, "threshold.b": f.b_, "threshold.mse": f.mse_, "threshold.tolerance": tol,
                  "effective_bottlenecks": float(len(effective))}
        return effective, (max(effective) if effective else 0.0), inputs

    def propose(self, ctx: PolicyContext) -> Proposal:
        cfg = ctx.config
        obs = ctx.observation
        current = obs.parallelism
        times = {s.name: stage_bottleneck_time(s) for s in obs.stages}
        inputs = {f"{n}.bottleneck_time_s": round(t, 4) for n, t in times.items() if math.isfinite(t)}
        if cfg.effective_detector == "regression":
            got = self.detect(ctx)
            if isinstance(got, str):
                return Proposal(current, got, inputs, hold=True)
            effective, tr, more = got
            inputs.update(more)
            if len(effective) < cfg.mestream_min_recurrences:
                return Proposal(current, f"steady: {len(effective)} effective bottleneck(s) in the last "
                                f"{cfg.bottleneck_interval_s:.0f}s (reallocate at {cfg.mestream_min_recurrences})",
                                inputs)
        else:  # rate detector: a stage busier than the target utilization is a bottleneck; Tr = the worst T
            hot = [s for s in obs.stages if (s.utilization() or 0.0) > cfg.target_utilization + cfg.utilization_boundary]
            if not hot:
                return Proposal(current, "steady: no stage above target utilization", inputs)
            tr = max(times[s.name] for s in hot)
        inputs["reference_bottleneck_s"] = tr
        levels = bottleneck_levels(times, tr, cfg.mestream_magnitude)
        if not levels:
            return Proposal(current, f"steady: reference bottleneck {tr:.2f}s but no stage's bottleneck time "
                            "is of the same order of magnitude", inputs)
        targets, parts = dict(current), []
        for s in obs.stages:
            if s.name not in levels:
                continue
            p, lvl = int(s.parallelism), levels[s.name]
            new = min(plan_tasks(p, p, lvl, cfg.phi), stage_bound(s.max_parallelism, cfg))
            new = max(new, cfg.min_parallelism)
            inputs[f"{s.name}.bottleneck_level"] = float(lvl)
            targets[s.name] = new
            if new != p:
                verb = "scale out" if new > p else "scale in"
                parts.append(f"{verb} {s.name} {p}→{new}: bottleneck level {lvl} (T={times[s.name]:.2f}s, "
                             f"Tr={tr:.2f}s), eq. 7 with φ={cfg.phi:g}")
        if not parts:
            return Proposal(targets, "steady: bottlenecks found but eq. 7 changes nothing (bounds)", inputs)
        return Proposal(targets, "; ".join(parts), inputs)
