"""A Spark app run on this machine: a standalone Spark cluster and the spark_apps runner (the driver), observed by
scraping the runner's /metrics and rescaled through its control endpoint, as the operator does in a cluster.

stop() ends them all — also after Ctrl-C or an error — so a second run finds no process or port in its way.
"""
from __future__ import annotations

import secrets
import subprocess
import sys
import time
from pathlib import Path

from typing import Any

import requests

from elastream.api.manifests import ManifestError
from elastream.engines.base import MetricsUnavailable
from elastream.engines.spark.nexmark_feed import NexmarkFeed
from elastream.engines.spark.control import ControlEndpointClient, ControlEndpointRealizer, ControlError
from elastream.engines.spark.observation import SPARK_STAGE, wall_clock_processing_rate
from elastream.engines.spark.scrape import ScrapeMetricsSource
from elastream.local.manifest import LocalApp
from elastream.engines.spark.runner_args import runner_args
from spark_apps import verify
from spark_apps.cluster import LocalSparkCluster, free_port, stop_driver

DRAINED_POLLS = 3  # the run loop polls every sample interval (2 s): the lag stays 0 for about 4 s


def check_runnable(app: LocalApp) -> None:
    """ManifestError naming the field when the app cannot run locally."""
    spec = app.spec.spark
    if spec.attach is not None:
        raise ManifestError(app.name, ["spec.spark.attach: the local mode starts its own job; remove attach"])
    if spec.application.is_users:
        raise ManifestError(app.name, ["spec.spark.application.mainApplicationFile: elastream tune runs the built-in "
                                       "apps; elastream run runs your own application"])
    if spec.application.builtin is None:
        raise ManifestError(app.name, ["spec.spark.application.file: the local mode runs the built-in apps and "
                                       "mainApplicationFile, not a build() file"])
    if spec.source.type == "kafka":
        raise ManifestError(app.name, ["spec.spark.source.type: the local mode starts its own source: generator, or "
                                       "nexmark (a Kafka broker fed Nexmark events)"])
    if spec.source.type == "nexmark" and not spec.application.builtin.startswith("nexmark-"):
        raise ManifestError(app.name, ["spec.spark.application.builtin: a nexmark source feeds the nexmark-* "
                                       "applications only"])


class SparkLocalJob:
    LOG = "runner.log"  # the driver's output, in the work directory

    def __init__(self, app: LocalApp, workdir: Path, duration_s: float):
        self.app, self.workdir, self.duration_s = app, Path(workdir), duration_s
        self.token = secrets.token_urlsafe(24)
        self.metrics_port = self.control_port = 0
        self.cluster: LocalSparkCluster | None = None
        self.runner: subprocess.Popen | None = None
        self._metrics: ScrapeMetricsSource | None = None
        source = app.spec.spark.source
        self.feed = NexmarkFeed(source.nexmark, self.workdir, duration_s) if source.type == "nexmark" else None
        self._drained_polls = 0
        self._broker: str | None = None

    @property
    def checkpoint(self) -> Path:
        return self.workdir / "checkpoint"

    @property
    def sink(self) -> Path:
        return self.workdir / "sink"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    @property
    def control_url(self) -> str:
        return f"http://127.0.0.1:{self.control_port}"

    def start(self, ready_timeout_s: float = 240.0) -> "SparkLocalJob":
        spark = self.app.spec.spark
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            if self.feed is not None:
                self._broker = self.feed.start()
            self.cluster = LocalSparkCluster(workers=spark.executors.max, cores_per_worker=spark.executor.cores,
                                             memory=spark.executor.memory, base_dir=str(self.workdir / "spark"))
            self.cluster.start()
            self.metrics_port, self.control_port = free_port(), free_port()
            token_file = self.write_token()
            log = open(self.workdir / self.LOG, "ab")
            self.runner = subprocess.Popen([sys.executable, "-m", "spark_apps.runner", *self.runner_args(token_file)],
                                           stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            log.close()
            self._wait_ready(ready_timeout_s)
            if self.feed is not None:
                self.feed.begin()
        except BaseException:
            self.stop()
            raise
        return self

    def write_token(self) -> Path:
        """The control endpoint's token in a file only this user reads: what the driver is given."""
        token_file = self.workdir / "token"
        token_file.write_text(self.token)
        token_file.chmod(0o600)
        return token_file

    def runner_args(self, token_file: Path) -> list[str]:
        return runner_args(self.app.name, self.app.spec, master=self.cluster.master_url,
                           checkpoint=str(self.checkpoint), sink=str(self.sink), metrics_port=self.metrics_port,
                           control_port=self.control_port, token_file=str(token_file), bind_address="127.0.0.1",
                           duration_s=self.duration_s, progress_log=str(self.workdir / "progress.jsonl"),
                           nexmark_broker=self._broker)

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.runner.poll() is not None:
                raise RuntimeError(f"the driver exited with {self.runner.returncode}; see {self.workdir / self.LOG}")
            try:
                if requests.get(f"{self.control_url}/healthz", timeout=2).ok:
                    requests.get(self.metrics_url, timeout=2).raise_for_status()
                    return
            except requests.RequestException:
                pass
            time.sleep(0.5)
        raise TimeoutError(f"the driver was not ready after {timeout_s:.0f}s; see {self.workdir / self.LOG}")

    def describe(self) -> str:
        feed = f", {self.feed.describe()}" if self.feed is not None else ""
        return f"spark cluster {self.cluster.master_url}, metrics {self.metrics_url}, control {self.control_url}{feed}"

    def metrics(self) -> ScrapeMetricsSource:
        if self._metrics is None:
            self._metrics = ScrapeMetricsSource(self.metrics_url, self.app.name,
                                                max_parallelism=self.app.spec.spark.max_parallelism,
                                                executor_cores=self.app.spec.spark.executor.cores)
        return self._metrics

    def control(self) -> ControlEndpointClient:
        return ControlEndpointClient(self.control_url, self.token)

    def realizer(self) -> ControlEndpointRealizer:
        return ControlEndpointRealizer(self.control())

    def sample(self) -> dict[str, Any]:
        try:
            values = self.metrics().values()
        except MetricsUnavailable:
            values = {}
        try:
            state = self.control().executors()
        except ControlError:
            state = {}
        current, target = state.get("current"), state.get("target")
        return {"input_rate": values.get("inputRate"), "processing_rate": wall_clock_processing_rate(values),
                "latency_p99_s": values.get("latencyP99"), "latency_p50_s": values.get("latencyP50"),
                "backlog": values.get("backlog"), "busy": values.get("busyFraction"),
                "parallelism": {SPARK_STAGE: current} if current is not None else None,
                "target": {SPARK_STAGE: target} if target is not None else None}

    def verify(self, stopped_at: float) -> dict[str, Any]:
        if self.feed is not None:
            return self.feed.verify(self.app.spec.spark.application.builtin.removeprefix("nexmark-"),
                                    self.checkpoint, self.sink)
        produced = self.produced_until(stopped_at)
        if produced is None:
            return {"records_produced": 0, "records_processed": 0, "missing": 0, "unfinished": 0, "duplicates": 0,
                    "unexpected": 0, "exactly_once": False, "verified": False}
        # a run stopped before it drained (Ctrl-C, a drain cut short) still had records queued or in a batch:
        # those are unfinished; the sink is checked against what the job had read up to its last batch
        accounted = verify.accounted_offset(str(self.checkpoint), str(self.sink))
        produced = max(produced, accounted)  # a batch planned as the run stopped read past what `stopped_at` saw
        check = verify.check(str(self.checkpoint), str(self.sink), accounted)
        return {"records_produced": produced, "records_processed": check.processed, "missing": check.missing,
                "unfinished": produced - accounted, "duplicates": check.duplicates, "unexpected": check.unexpected,
                "exactly_once": check.exactly_once, "verified": check.exactly_once and accounted == produced}

    def produced_until(self, stopped_at: float) -> int | None:
        """Records the generator had offered when the run stopped (all of them if the load ran to its end)."""
        if not (self.checkpoint / verify.RUN_FILE).exists():
            return None
        profile, started = verify.generator_load(self.checkpoint)
        return profile.offered_count(stopped_at - started)

    def finished(self) -> bool:
        """The runner exited (the generator's load ended and all of it was processed); with a Nexmark feed, which
        the runner cannot see the end of: every event sent and the lag 0, and then, for a query whose output waits
        for the watermark (q5), the last batch without input (the one that emits the windows the final watermark
        closed: it follows the last batch with input); for the others, the lag 0 at DRAINED_POLLS calls in a row."""
        if self.runner is not None and self.runner.poll() is not None:
            return True
        if self.feed is None or not self.feed.done():
            return False
        try:
            values = self.metrics().values()
        except MetricsUnavailable:
            values = {}
        self._drained_polls = self._drained_polls + 1 if values.get("backlog") == 0 else 0
        if self.feed.waits_for_watermark(self.app.spec.spark.application.builtin):
            return self._drained_polls > 0 and values.get("inputRate") == 0
        return self._drained_polls >= DRAINED_POLLS

    def stop(self) -> None:
        """Stop the driver (gracefully: the query commits what it has), then the cluster. Safe to call twice."""
        if self.runner is not None:
            stop_driver(self.runner)
            self.runner = None
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None
        if self.feed is not None:
            self.feed.stop()
