"""One evaluation of a Spark configuration for `elastream tune`: the StreamApp's real PySpark job, run with that
configuration under a constant rate on a standalone cluster that stays up between evaluations.

A trial starts the driver (the spark_apps runner) with the rate starting once a driver has had time to start (as
long as the last one took), lets it work off whatever backlog its start-up still left, then measures
`measure_s` seconds of micro-batches from its progress log. Its objective is the p99 latency of the records in
that window. It fails (seed 004's FailConf) when the driver exits or never runs a batch, when it never catches up
with its start-up backlog within catch_up_s, or when it falls behind the offered rate while measured.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from elastream.api.base import parse_duration
from elastream.api.streamapp import StreamAppSpec
from elastream.engines.spark.runner_args import runner_args
from elastream.tune import knobs
from elasticity.tuning.loop import EvaluationFailed
from spark_apps.cluster import LocalSparkCluster, free_port, stop_driver
from spark_apps.runner import RUN_FILE
from spark_apps.source import GeneratorConfig


QUIET_S = 30.0  # the first trial's guess of how long a driver takes to start


@dataclass(frozen=True)
class TrialLoad:
    """What every trial runs under."""

    rate: float  # records/s, constant
    executors: int
    measure_s: float = 30.0
    catch_up_s: float = 300.0  # after the first batch, the longest the start-up backlog may take to work off
    shrink_s: float = 45.0  # a backlog no smaller than this long before has settled
    start_timeout_s: float = 240.0  # until the first batch
    behind_share: float = 0.05  # backlog growth over the window, as a share of what was offered, that is falling behind


@dataclass(frozen=True)
class Batch:
    time: float  # commit, seconds since the epoch
    rows: int
    p99: float | None
    backlog: float  # records offered but not read when the batch committed


def trial_spec(spec: StreamAppSpec, config: dict[str, Any], load: TrialLoad, trace: Path, quiet_s: float) -> StreamAppSpec:
    """The StreamApp with `config`, under the trial's rate and fixed executor count. The rate starts after
    `quiet_s` (written as a one-row trace): the time a driver takes to start, so that the first batch does not
    carry everything offered meanwhile (the runner's generator offers from the moment the run is created)."""
    tuned = knobs.apply(spec, config).model_dump(by_alias=True, exclude_none=True)
    trace.write_text(f"time,rate\n{quiet_s:.1f},{load.rate}\n")
    tuned["spark"]["source"]["generator"] = {"profile": "trace", "trace": str(trace)}
    tuned["spark"]["executors"] = {"initial": load.executors, "min": load.executors, "max": load.executors}
    return StreamAppSpec.model_validate(tuned)


def measure(batches: list[Batch], rate: float, trigger_s: float, load: TrialLoad) -> tuple[float | None, str]:
    """(p99 of the window, "") once the window is complete; (None, why) while it is not; raises EvaluationFailed.

    The window starts after the start-up backlog has settled: the first batch whose backlog is under what two
    triggers and two seconds of input leave, or that is no smaller than load.shrink_s before (a job that keeps up
    with a standing backlog is measured, not failed). It lasts load.measure_s; a backlog that grows in it is
    falling behind."""
    if not batches:
        return None, "waiting for the first micro-batch"
    start = settled_at(batches, rate * (2 * trigger_s + 2.0), load.shrink_s)
    if start is None:
        if batches[-1].time - batches[0].time > load.catch_up_s:
            raise EvaluationFailed(f"never caught up with its start-up backlog in {load.catch_up_s:.0f}s "
                                   f"({batches[-1].backlog:.0f} records waiting)")
        return None, "working off the start-up backlog"
    start += 1  # the batch that settled still carries its waits
    if start >= len(batches) or batches[-1].time - batches[start].time < load.measure_s:
        return None, "measuring"
    window = [b for b in batches[start:] if b.time - batches[start].time <= load.measure_s]
    growth = window[-1].backlog - window[0].backlog
    if growth > load.behind_share * rate * load.measure_s + rate * trigger_s:  # one trigger's worth is jitter
        raise EvaluationFailed(f"fell behind {rate:.0f} records/s: its backlog grew by {growth:.0f} records in "
                               f"{load.measure_s:.0f}s")
    return row_weighted_p99(window), ""


def settled_at(batches: list[Batch], small: float, shrink_s: float) -> int | None:
    """The first batch whose backlog is under `small`, or no smaller than that of the last batch at least
    `shrink_s` before it (the backlog stopped shrinking); None while neither."""
    for i, b in enumerate(batches):
        if b.backlog <= small:
            return i
        earlier = [a for a in batches[:i] if a.time <= b.time - shrink_s]
        if earlier and b.backlog >= earlier[-1].backlog:
            return i
    return None


def row_weighted_p99(batches: list[Batch]) -> float:
    """The 99th percentile of the records' latency, each batch's records at its p99 (an upper bound for most of
    them): the smallest batch p99 that 99 % of the rows are at or under."""
    done = [b for b in batches if b.p99 is not None and b.rows > 0]
    if not done:
        raise EvaluationFailed("no batch in the window measured a latency")
    p99 = np.array([b.p99 for b in done])
    rows = np.array([b.rows for b in done], dtype=float)
    order = np.argsort(p99)
    share = np.cumsum(rows[order]) / rows.sum()
    return float(p99[order][np.searchsorted(share, 0.99)])


class LocalSparkTrials:
    """Evaluates configurations of one StreamApp on one standalone cluster, kept up between trials (a trial is a
    new Spark application: executor cores and memory are per application)."""

    def __init__(self, spec: StreamAppSpec, name: str, load: TrialLoad, workdir: Path):
        self.spec, self.name, self.load, self.workdir = spec, name, load, Path(workdir)
        self.cluster: LocalSparkCluster | None = None
        self.trials = 0
        self.quiet_s = QUIET_S  # then what the last driver took to run its first batch

    def start(self) -> "LocalSparkTrials":
        shutil.rmtree(self.workdir, ignore_errors=True)  # an earlier session's checkpoints and logs would be resumed
        self.workdir.mkdir(parents=True)
        cores = knobs.RANGES["executor_cores"][1]
        memory = knobs.RANGES["executor_memory_mb"][1]
        self.cluster = LocalSparkCluster(workers=self.load.executors, cores_per_worker=cores, memory=f"{memory}m",
                                         base_dir=str(self.workdir / "spark")).start()
        return self

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None

    def __enter__(self) -> "LocalSparkTrials":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __call__(self, config: dict[str, Any]) -> float:
        """The p99 latency (seconds) of `config`; EvaluationFailed when it fails."""
        self.trials += 1
        where = self.workdir / f"trial-{self.trials}"
        where.mkdir(parents=True, exist_ok=True)
        spec = trial_spec(self.spec, config, self.load, where / "load.csv", self.quiet_s)
        args = runner_args(self.name, spec, master=self.cluster.master_url, checkpoint=str(where / "checkpoint"),
                           sink=str(where / "sink"), metrics_port=free_port(), control_port=free_port(),
                           token_file=str(self._token(where)), bind_address="127.0.0.1",
                           progress_log=str(where / "progress.jsonl"))
        with open(where / "runner.log", "ab") as log:
            runner = subprocess.Popen([sys.executable, "-m", "spark_apps.runner", *args], stdout=log,
                                      stderr=subprocess.STDOUT, start_new_session=True)
        launched = time.time()
        try:
            return self._watch(runner, where, parse_duration(spec.spark.trigger_interval))
        finally:
            stop_driver(runner)
            first = first_commit(where / "progress.jsonl")
            if first is not None:
                self.quiet_s = min(max(first - launched + 5.0, 10.0), 180.0)

    def _watch(self, runner: subprocess.Popen, where: Path, trigger_s: float) -> float:
        started = time.monotonic()
        while True:
            if runner.poll() is not None:
                raise EvaluationFailed(f"the driver exited with {runner.returncode}: {last_line(where / 'runner.log')}")
            batches = read_batches(where)
            if not batches and time.monotonic() - started > self.load.start_timeout_s:
                raise EvaluationFailed(f"no micro-batch within {self.load.start_timeout_s:.0f}s")
            p99, _ = measure(batches, self.load.rate, trigger_s, self.load)
            if p99 is not None:
                return p99
            time.sleep(1.0)

    @staticmethod
    def _token(where: Path) -> Path:
        token = where / "token"
        token.write_text("elastream-tune")
        token.chmod(0o600)
        return token


def read_batches(where: Path) -> list[Batch]:
    """The committed micro-batches so far, with the backlog each left (offered by the generator's profile at the
    commit time, minus the batch's end offset)."""
    run_file, log = where / "checkpoint" / RUN_FILE, where / "progress.jsonl"
    if not (run_file.exists() and log.exists()):
        return []
    run = json.loads(run_file.read_text())
    profile, start = GeneratorConfig(**run["source"]["generator"]).build(), run["start_us"] / 1e6
    out = []
    for line in log.read_text().splitlines():
        try:
            p = json.loads(line)
            end = sum(_seq(o) for o in p["end_offsets"])
        except (ValueError, KeyError, TypeError):
            continue  # a line being written
        offered = profile.offered_count(p["time"] - start)
        if offered > 0:  # batches before the load starts measure nothing
            out.append(Batch(p["time"], p["rows"], p.get("latency_p99"), offered - end))
    return out


def first_commit(log: Path) -> float | None:
    """When the driver committed its first micro-batch (seconds since the epoch), or None."""
    try:
        return json.loads(log.read_text().splitlines()[0])["time"]
    except (OSError, IndexError, ValueError, KeyError):
        return None


def _seq(offset: Any) -> int:
    return int((json.loads(offset) if isinstance(offset, str) else offset)["seq"])


def last_line(path: Path) -> str:
    lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()] if path.exists() else []
    return lines[-1][:300] if lines else "no output"
