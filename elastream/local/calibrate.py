"""The simulator beside a real run: read what `elastream run` recorded of a Spark job, fit the simulator's
micro-batch job to it (elasticity.simulation.calibration), replay the same load under the same policy in the
simulator, and compare the two — figures and a side-by-side plot. The replay starts at the run's first commit: the
simulated job has no JVM to start, and before that commit the real policy had nothing to read.

A run's report directory holds what is needed: report.json (rescales, and when the loop started),
timeline.json (samples every 2 s: rates, p99, backlog, executors registered), job/progress.jsonl (one line per
micro-batch) and job/checkpoint/elastream-run.json (the load profile and when it started).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from elastream.errors import UserError
from elastream.local.manifest import LocalApp
from elastream.policy_config import to_policy_config
from elasticity.simulation import runner
from elasticity.simulation.calibration import Batch, MicroBatchCalibration, Rescale
from elasticity.simulation.scenarios import Scenario
from spark_apps import verify
from spark_apps.profile import RateProfile, parse_duration


@dataclass
class RealRun:
    """A local Spark run, on the load's clock (seconds since the generator started offering)."""

    batches: list[Batch]
    rescales: list[Rescale]
    samples: list[dict[str, Any]]  # timeline samples, "t" moved to the load's clock
    profile: RateProfile
    end_s: float  # the last sample

    @classmethod
    def read(cls, report_dir: Path) -> "RealRun":
        try:
            report = json.loads((report_dir / "report.json").read_text())
            samples = json.loads((report_dir / "timeline.json").read_text())
            progress = (report_dir / "job" / "progress.jsonl").read_text().splitlines()
            profile, load_start = verify.generator_load(report_dir / "job" / "checkpoint")
        except FileNotFoundError as err:
            raise UserError(f"{report_dir} is not the report of a local Spark run with a generator "
                            f"(missing {err.filename})") from None
        except ValueError as err:
            raise UserError(f"{report_dir}: calibration needs a Spark run with a generator source ({err})") from None
        if "started_epoch_s" not in report:
            raise UserError(f"{report_dir}: calibration needs a run reported by this version of elastream run "
                            "(report.json has no started_epoch_s)")
        shift = report["started_epoch_s"] - load_start  # loop clock -> load clock
        samples = [{**s, "t": s["t"] + shift} for s in samples]
        batches = [Batch(p["time"] - load_start, p["rows"], p["batch_duration"], p.get("executors"))
                   for p in map(json.loads, progress)]
        rescales = [Rescale(r["t"] + shift, r["from"], r["to"], _ready_after(samples, r["t"] + shift, r["to"]))
                    for r in report["rescales"] if isinstance(r["to"], int)]
        return cls(batches, rescales, samples, profile, samples[-1]["t"] if samples else 0.0)

    @property
    def first_commit_s(self) -> float:
        """When the job committed its first batch: before it the JVMs were starting and nothing was measured, so
        the policy had nothing to read (0 if the run logged no batch)."""
        return self.batches[0].end_s if self.batches else 0.0

    def offered_rate(self, t: np.ndarray) -> np.ndarray:
        """Records/s offered over [t, t + 1)."""
        t = np.asarray(t, float)
        return self.profile.offered(t + 1.0) - self.profile.offered(t)


def _executors(sample: dict[str, Any]) -> int | None:
    """Executors registered at a timeline sample (None while the runner could not tell)."""
    return next(iter((sample.get("parallelism") or {}).values()), None)


def _ready_after(samples: list[dict[str, Any]], t: float, target: int) -> float | None:
    """Seconds from t until a sample shows `target` executors registered."""
    for s in samples:
        if s["t"] >= t and _executors(s) == target:
            return s["t"] - t
    return None


@dataclass
class Comparison:
    """A real run and its replay; the replay starts at the run's first commit (`start_s`, load clock) and its
    figures are on the replay's clock (seconds since then)."""

    calibration: MicroBatchCalibration
    real: RealRun
    simulated: runner.SimResult
    start_s: float

    def table(self) -> list[tuple[str, str, str]]:
        """(figure, real, simulated) rows over the span both ran: from the first commit to the last sample."""
        real, sim = self.real, self.simulated
        t_real = np.array([s["t"] for s in real.samples])
        span = (t_real >= self.start_s) & (t_real <= real.end_s)
        executors = np.array([_executors(s) or np.nan for s in real.samples], float)
        dt_real = np.gradient(t_real) if len(t_real) > 1 else np.ones(1)
        target = sim.latency_target_s
        p99 = np.array([np.nan if s.get("latency_p99_s") is None else s["latency_p99_s"] for s in real.samples])
        backlog = np.array([np.nan if s.get("backlog") is None else s["backlog"] for s in real.samples])
        tl = sim.timeline
        first_out = lambda ts: f"{ts[0]:.0f} s" if ts else "-"  # noqa: E731
        return [
            ("rescales", str(len(real.rescales)), str(sim.summary["rescales"])),
            ("first scale-out at", first_out([r.t_s for r in real.rescales if r.after > r.before]),
             first_out([d.timestamp + self.start_s for d in sim.decisions
                        if d.realize and sum(d.targets.values()) > sum(d.current.values())])),
            ("executor-seconds", f"{np.nansum(executors[span] * dt_real[span]):.0f}",
             f"{float(np.sum(tl.parallelism)):.0f}"),
            ("peak backlog (records)", f"{np.nanmax(backlog[span]):.0f}" if np.isfinite(backlog[span]).any() else "-",
             f"{float(np.max(tl.backlog.sum(axis=1))):.0f}"),
            (f"seconds p99 > {target:g} s", f"{np.nansum((p99[span] > target) * dt_real[span]):.0f}",
             f"{float(np.sum(tl.latency_p99 > target)):.0f}"),
        ]


def compare(app: LocalApp, report_dir: Path, calibration: MicroBatchCalibration | None = None) -> Comparison:
    """Fit the simulator to the run in `report_dir` of `app`, and replay the run's load in it."""
    if app.spec.spark is None:
        raise UserError(f"{app.name}: calibration is for Spark apps (engine: spark)")
    real = RealRun.read(report_dir)
    start = real.first_commit_s  # the simulator has no JVM start: its job runs, and is read, from its first step
    spark = app.spec.spark
    cal = (calibration or MicroBatchCalibration()).fit(real.batches, real.rescales,
                                                     parse_duration(spark.trigger_interval))
    spec = cal.job_spec(app.name, key_groups=spark.max_parallelism, initial_parallelism=spark.executors.initial)
    duration = max(1, int(real.end_s - start))
    scenario = Scenario(f"{app.name}-replay", "the real run's load from its first commit", float(duration),
                        lambda t: real.offered_rate(np.asarray(t, float) + start), noise_sd=0.0, job=spec)
    config = to_policy_config(app.policy, app.spec)
    simulated = runner.run(scenario, config.algorithm, config, keep_decisions=True)
    return Comparison(cal, real, simulated, start)


def plot(comparison: Comparison, path: Path, title: str) -> None:
    """Rate, p99 latency and executors of the real run and of its replay, one panel each, overlaid."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    real, sim = comparison.real, comparison.simulated
    tl = sim.timeline
    t_sim = tl.t + comparison.start_s
    t = [s["t"] for s in real.samples]
    fig, (ax_rate, ax_lat, ax_exec) = plt.subplots(3, 1, figsize=(10, 8), sharex=True)
    ax_rate.plot(t_sim, tl.arrivals, color="grey", alpha=0.6, label="offered")
    ax_rate.plot(t, [s.get("processing_rate") for s in real.samples], color="tab:blue", label="processed, real")
    ax_rate.plot(t_sim, tl.processed[:, 0], color="tab:orange", linestyle="--", label="processed, simulated")
    ax_rate.set_ylabel("records/s")
    ax_rate.legend(loc="upper right")
    ax_lat.plot(t, [s.get("latency_p99_s") for s in real.samples], color="tab:blue", label="p99, real")
    ax_lat.plot(t_sim, tl.latency_p99, color="tab:orange", linestyle="--", label="p99, simulated")
    ax_lat.axhline(sim.latency_target_s, color="tab:red", linestyle=":", label="target")
    ax_lat.set_ylabel("seconds")
    ax_lat.set_yscale("log")
    ax_lat.legend(loc="upper right")
    ax_exec.step(t, [_executors(s) for s in real.samples], where="post",
                 color="tab:blue", label="executors, real")
    ax_exec.step(t_sim, tl.parallelism[:, 0], where="post", color="tab:orange", linestyle="--",
                 label="executors, simulated")
    for ax in (ax_rate, ax_lat, ax_exec):
        ax.axvline(comparison.start_s, color="grey", linestyle=":", linewidth=1)
    ax_exec.annotate(" replay starts: the run's first commit", (comparison.start_s, 0.02),
                     xycoords=("data", "axes fraction"), fontsize=8, color="grey")
    ax_exec.set_ylabel("executors")
    ax_exec.set_xlabel("seconds since the load started")
    ax_exec.legend(loc="upper right")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
