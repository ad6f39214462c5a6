"""A response surface fitted from a real tuning run (the report.json of `elastream tune`).

The surface is the Spark-like job of problems.py under the run's own load, space and executors. Its free constants
are chosen so that it reproduces what the run measured: CPU per record, the fixed cost of a batch and the cost of a
task, plus a latency scale for what the model leaves out (JVM pauses, a shared machine). The fit minimises the
squared error of log p99 over the trials that passed, plus a penalty for every trial whose outcome (passed or failed)
the model gets wrong. A coarse grid is searched, so the fit is deterministic; the scale is then closed-form (the mean
log ratio). A run of a dozen trials fixes a few constants, not a surface of seven knobs: the rest of the shape comes
from the model.
"""
from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any

from elasticity.errors import InputError
from elasticity.tuning.loop import EvaluationFailed
from elasticity.tuning.problems import SparkLikeJob
from elasticity.tuning.space import ConfigSpace

WRONG_OUTCOME = 1.0  # the penalty, in squared log units, for a trial predicted to pass that failed or vice versa
GRID = {"record_cpu_ms": [0.01 * 1.6 ** i for i in range(14)],
        "batch_fixed_s": [0.05 * 2.0 ** i for i in range(7)],
        "task_overhead_s": [0.0005 * 3.0 ** i for i in range(7)]}
STATE_MB = 50.0  # a word count's state: small; the run does not measure it


@dataclass(frozen=True)
class FittedJob:
    """A SparkLikeJob with fitted constants, over the real run's space, at its fixed number of executors."""

    name: str
    job: SparkLikeJob
    executors: int
    scale: float
    space: ConfigSpace
    fit_error: float  # root mean squared log error over the run's passed trials

    def evaluate(self, config: dict[str, Any]) -> float:
        return self.scale * self.job.evaluate({**config, "executors": self.executors})


def load_report(name: str) -> dict[str, Any]:
    """A real run's report shipped with the package (elasticity/tuning/runs/NAME.json)."""
    return json.loads(resources.files("elasticity.tuning").joinpath("runs", f"{name}.json").read_text())


def fit(report: dict[str, Any], name: str) -> FittedJob:
    """The constants that best reproduce the report's trials (InputError when it has too few to fit)."""
    trials = [(t["config"], t["p99_s"]) for t in report.get("trials", [])]
    passed = [(c, v) for c, v in trials if v is not None]
    if len(passed) < 3:
        raise InputError(f"{name}: {len(passed)} trials passed; a fit needs at least 3")
    space, load = ConfigSpace.from_description(report["space"]), report["load"]
    cores = next(k.high for k in space.knobs if k.name == "executor_cores")
    memory = next(k.high for k in space.knobs if k.name == "executor_memory_mb")
    base = SparkLikeJob(name, rate=float(load["rate"]), record_cpu_ms=1.0, state_mb=STATE_MB,
                        cluster_cores=load["executors"] * cores, cluster_memory_mb=load["executors"] * memory)
    best = None
    for values in itertools.product(*GRID.values()):
        job = replace(base, **dict(zip(GRID, values)))
        loss, scale, error = _loss(job, load["executors"], trials)
        if best is None or loss < best[0]:
            best = (loss, job, scale, error)
    _, job, scale, error = best
    return FittedJob(name, job, load["executors"], scale, space, error)


def _loss(job: SparkLikeJob, executors: int, trials) -> tuple[float, float, float]:
    """(loss, scale, rms log error) of a candidate job over the trials."""
    logs, wrong = [], 0
    for config, measured in trials:
        try:
            modelled = job.evaluate({**config, "executors": executors})
        except EvaluationFailed:
            wrong += measured is not None
            continue
        if measured is None:
            wrong += 1
        else:
            logs.append(math.log(measured) - math.log(modelled))
    if not logs:
        return math.inf, 1.0, math.inf
    shift = sum(logs) / len(logs)  # the scale's logarithm, in closed form
    sq = sum((x - shift) ** 2 for x in logs)
    return sq + WRONG_OUTCOME * wrong, math.exp(shift), math.sqrt(sq / len(logs))
