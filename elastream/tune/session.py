"""A tuning session: the StreamApp read from its file, the optimiser, the trials on the real job, the progress
line, and what is left behind (report.json, convergence.png, best-patch.yaml)."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import yaml

from elasticity import json_report
from elastream.api.manifests import ManifestError
from elastream.engines.spark.local import check_runnable
from elastream.local import manifest
from elastream.tune import knobs
from elastream.tune.trials import LocalSparkTrials, TrialLoad
from elasticity.tuning.loop import Trial, TuningResult, tune
from elasticity.tuning.optimizers import OPTIMIZERS

BAR_WIDTH = 20


@dataclass(frozen=True)
class TuneSettings:
    budget: int
    method: str
    report_dir: Path
    rate: float | None = None  # default: the generator's peak
    executors: int | None = None  # default: executors.max
    measure_s: float = 30.0
    seed: int = 0


def tune_app(path: Path, settings: TuneSettings, out: TextIO | None = None) -> dict[str, Any]:
    out = out if out is not None else sys.stdout
    app = manifest.load(path)
    if app.spec.engine != "spark":
        raise ManifestError(app.name, ["spec.engine: elastream tune tunes Spark configurations; this app runs on Storm"])
    check_runnable(app)
    load = trial_load(app.spec, settings)
    space = knobs.space_for(app.spec)
    optimizer = OPTIMIZERS[settings.method](space, seed=settings.seed)
    report_dir = Path(settings.report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    print(f"elastream tune: {app.name}, {settings.method}, {settings.budget} evaluations at {load.rate:.0f} records/s "
          f"on {load.executors} executor(s), {load.measure_s:.0f}s measured each; report in {report_dir}",
          file=out, flush=True)
    started, result, interrupted = time.time(), TuningResult(), False
    with LocalSparkTrials(app.spec, app.name, load, report_dir / "trials") as trials:
        try:
            tune(trials, space, optimizer, settings.budget, result=result,
                 on_trial=lambda t, r: print(progress_line(t, r, settings.budget), file=out, flush=True))
        except KeyboardInterrupt:
            interrupted = True
            print("\ninterrupted: stopping", file=out, flush=True)
    report = write_report(report_dir, app.name, settings, load, space, result, time.time() - started, interrupted)
    best = report["best"]
    print(f"done: best p99 {best['p99_s']:.2f}s, {report['best_vs_default'] or 'n/a'}x the default's; "
          f"{report_dir / 'best-patch.yaml'}" if best else "done: no configuration kept up", file=out, flush=True)
    return report


def trial_load(spec, settings: TuneSettings) -> TrialLoad:
    """The load of every trial: the generator's peak on the most executors, unless the settings say otherwise."""
    gen = spec.spark.source.generator
    rate = settings.rate or max(gen.rate, gen.peak_rate or 0.0)
    return TrialLoad(rate=rate, executors=settings.executors or spec.spark.executors.max, measure_s=settings.measure_s)


def progress_line(trial: Trial, result: TuningResult, budget: int) -> str:
    done = len(result.trials)
    bar = "#" * round(BAR_WIDTH * done / budget)
    best = result.best()
    this = f"p99 {trial.value:.2f}s" if trial.value is not None else f"failed: {trial.failed}"
    best_text = f"best {best.value:.2f}s (#{best.number})" if best else "best: none yet"
    return f"[{bar:<{BAR_WIDTH}}] {done}/{budget} {best_text} | #{trial.number} {describe(trial.config)} -> {this} ({trial.seconds:.0f}s)"


def describe(config: dict[str, Any]) -> str:
    cap = config["max_records_per_trigger"]
    return (f"trigger {config['trigger_interval_s']:.2f}s, {config['shuffle_partitions']} partitions, "
            f"cap {'none' if cap >= knobs.NO_CAP else cap}, {config['executor_cores']} core(s) {config['executor_memory_mb']}m, "
            f"{config['state_store']}, locality {config['locality_wait_s']:.1f}s")


def write_report(report_dir: Path, name: str, settings: TuneSettings, load: TrialLoad, space, result: TuningResult,
                 seconds: float, interrupted: bool) -> dict[str, Any]:
    default = result.trials[0] if result.trials else None
    best = result.best()
    ratio = (round(default.value / best.value, 3) if default is not None and default.value is not None and best
             else None)
    report = {
        "app": name, "method": settings.method, "budget": settings.budget, "seed": settings.seed,
        "load": {"rate": load.rate, "executors": load.executors, "measure_s": load.measure_s},
        "space": space.describe(), "seconds": round(seconds, 1), "interrupted": interrupted,
        "default": _trial_view(default), "best": _trial_view(best), "best_vs_default": ratio,
        "failed": sum(t.value is None for t in result.trials),
        "trials": [_trial_view(t) for t in result.trials],
        "patch": knobs.patch(best.config) if best else None,
    }
    (report_dir / "report.json").write_text(json_report.dumps(report))
    if best:
        (report_dir / "best-patch.yaml").write_text(
            f"# elastream tune {settings.method}: p99 {best.value:.2f}s at {load.rate:.0f} records/s on {load.executors} "
            f"executor(s) (the StreamApp's own configuration: {_p99_text(default)})\n"
            + yaml.safe_dump(report["patch"], sort_keys=False))
    plot_convergence(report_dir / "convergence.png", name, settings.method, result)
    return report


def _p99_text(trial: Trial | None) -> str:
    return f"p99 {trial.value:.2f}s" if trial is not None and trial.value is not None else "failed"


def _trial_view(trial: Trial | None) -> dict[str, Any] | None:
    if trial is None:
        return None
    return {"number": trial.number, "config": trial.config, "p99_s": trial.value, "failed": trial.failed,
            "seconds": trial.seconds}


def plot_convergence(path: Path, name: str, method: str, result: TuningResult) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    ran = [t for t in result.trials if t.value is not None]
    failed = [t for t in result.trials if t.value is None]
    ax.scatter([t.number for t in ran], [t.value for t in ran], label="evaluation (p99)", color="tab:blue")
    top = max([t.value for t in ran], default=1.0)
    ax.scatter([t.number for t in failed], [top] * len(failed), marker="x", color="tab:red",
               label="failed or fell behind (drawn at the top)")
    ax.step([t.number for t in result.trials], result.best_so_far(), where="post", color="black", label="best so far")
    ax.set_xlabel("evaluation")
    ax.set_ylabel("p99 latency (s)")
    ax.set_title(f"elastream tune {name} ({method})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
