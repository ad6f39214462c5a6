"""A user's own Spark application on this machine (`elastream run`), run as it is: spark-submit starts its main file
(a .py file, or a jar with its main class) on a standalone Spark cluster with elastream's Spark plugin and Spark's
Kafka connector on the classpath, a Kafka broker holds its topic and a producer writes text lines into it at the
StreamApp's load profile. The application
imports nothing from elastream: the plugin inside its driver exports its metrics and serves the control endpoint
the same loop as the built-in apps rescales it through.

The application finds the broker as it would in a cluster, through its arguments: `$(KAFKA_BOOTSTRAP_SERVERS)` and
`$(ELASTREAM_WORKDIR)` (where it may keep its checkpoint and sink) are replaced as Kubernetes replaces `$(VAR)` in
a container's arguments, and are set in its environment.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from elastream.api.manifests import ManifestError
from elastream.engines.base import MetricsUnavailable
from elastream.engines.spark.local import SparkLocalJob
from elastream.engines.spark.plugin_conf import plugin_conf, submit_args
from elastream.local.manifest import LocalApp
from kafka_broker.broker import LocalKafka
from nexmark.producer import NexmarkProducer
from spark_apps import jars, records
from spark_apps.cluster import LocalSparkCluster, free_port, spark_home
from spark_apps.profile import make_profile

DRAINED_POLLS = 3
_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def check_runnable(app: LocalApp) -> None:
    """ManifestError naming the field when this machine cannot run the user's application."""
    if app.spec.spark.source.type != "kafka":
        raise ManifestError(app.name, ["spec.spark.source.type: a user's application reads Kafka here: set kafka "
                                       "(its topic; the local mode starts the broker) and generator (the load)"])
    if app.spec.spark.application.main_is_url:
        raise ManifestError(app.name, ["spec.spark.application.mainApplicationFile: a URL is for a cluster (spark-"
                                       "submit fetches it in the driver pod); elastream run takes a file here"])
    if not main_file(app).is_file():
        raise ManifestError(app.name, [f"spec.spark.application.mainApplicationFile: no file {main_file(app)}"])


def main_file(app: LocalApp) -> Path:
    """The main file on this machine: local:// dropped, a relative path taken from the manifest's directory."""
    path = Path(app.spec.spark.application.main_application_file.removeprefix("local://"))
    return path if path.is_absolute() else (app.directory / path).resolve()


def expand(argument: str, env: dict[str, str]) -> str:
    """$(VAR) replaced by env[VAR], as Kubernetes expands a container's arguments; unknown references stay."""
    return _VAR.sub(lambda m: env.get(m.group(1), m.group(0)), argument)


class LineProducer(NexmarkProducer):
    """The generator's lines of words (spark_apps.records: record n is always the same line), to partition n mod P."""

    def values(self, n: np.ndarray, times_ms: np.ndarray) -> list[bytes]:
        return [line.encode() for line in records.lines(n)]


class UsersAppLocalJob(SparkLocalJob):
    LOG = "driver.log"

    def __init__(self, app: LocalApp, workdir: Path, duration_s: float):
        super().__init__(app, workdir, duration_s)
        spark, source = app.spec.spark, app.spec.spark.source
        self.topic = source.kafka.topic
        self.partitions = max(2, spark.executors.max * spark.executor.cores)  # enough read tasks for every core
        self.profile = make_profile(source.generator.profile, source.generator.rate, source.generator.peak_rate,
                                    source.generator.period, source.generator.trace, duration=duration_s)
        self.broker: LocalKafka | None = None
        self.producer: LineProducer | None = None
        self._last_read = 0

    def start(self, ready_timeout_s: float = 300.0) -> "UsersAppLocalJob":
        spark = self.app.spec.spark
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self.broker = LocalKafka(base_dir=self.workdir / "kafka").start()
            self.broker.create_topic(self.topic, self.partitions)
            self.cluster = LocalSparkCluster(workers=spark.executors.max, cores_per_worker=spark.executor.cores,
                                             memory=spark.executor.memory, base_dir=str(self.workdir / "spark"))
            self.cluster.start()
            self.metrics_port, self.control_port = free_port(), free_port()
            token_file = self.write_token()
            env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": self.broker.bootstrap_servers,
                   "ELASTREAM_WORKDIR": str(self.workdir), "PYSPARK_PYTHON": sys.executable,
                   "PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_HOME": spark_home()}
            log = open(self.workdir / self.LOG, "ab")
            self.runner = subprocess.Popen(self.submit_command(token_file, env), stdout=log, stderr=subprocess.STDOUT,
                                           env=env, cwd=self.workdir, start_new_session=True)
            log.close()
            self._wait_ready(ready_timeout_s)
            self.producer = LineProducer(self.broker.bootstrap_servers, self.topic, self.partitions, self.profile,
                                         0, time.time_ns() // 1000, self.workdir / "producer.json")
            self.producer.start()
        except BaseException:
            self.stop()
            raise
        return self

    def submit_command(self, token_file: Path, env: dict[str, str]) -> list[str]:
        """spark-submit as a user runs it, plus what elastream adds by configuration alone."""
        spark, application = self.app.spec.spark, self.app.spec.spark.application
        deps = application.deps
        conf = {**plugin_conf(self.app.name, spark, self.metrics_port, self.control_port, str(token_file)),
                "spark.elastream.kafka.bootstrapServers": self.broker.bootstrap_servers,
                "spark.executor.instances": str(spark.executors.initial),
                "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                "spark.ui.enabled": "false", **spark.conf}
        user_jars = list(deps.jars) if deps else []
        conf["spark.jars"] = ",".join([*(str(j) for j in jars.spark_jars()), *user_jars])
        cmd = [str(Path(spark_home()) / "bin" / "spark-submit"), "--master", self.cluster.master_url,
               "--name", self.app.name]
        for key, value in conf.items():
            cmd += ["--conf", f"{key}={value}"]
        return [*cmd, *submit_args(application, str(main_file(self.app)),
                                   [expand(a, env) for a in application.arguments])]

    def describe(self) -> str:
        return (f"spark cluster {self.cluster.master_url}, driver {main_file(self.app).name} (spark-submit, "
                f"elastream's plugin), metrics {self.metrics_url}, control {self.control_url}, kafka "
                f"{self.broker.bootstrap_servers} topic {self.topic} ({self.partitions} partitions)")

    def _read(self) -> tuple[int | None, float | None]:
        """(records the query has read, backlog) from the plugin's metrics; None where it has not reported yet."""
        try:
            values = self.metrics().values()
            samples = self.metrics().last_samples
        except MetricsUnavailable:
            return None, None
        read = samples.get("elastream_source_end_offsets")
        return (int(sum(read.values())) if read else None), values.get("backlog")

    def finished(self) -> bool:
        """The driver exited; or every line sent and acknowledged, and the query has read them all, for
        DRAINED_POLLS calls in a row."""
        if self.runner is not None and self.runner.poll() is not None:
            return True
        if self.producer is None or not self.producer.done:
            if self.producer is not None and self.producer.error is not None:
                raise RuntimeError(f"the Kafka producer failed: {self.producer.error}")
            return False
        read, backlog = self._read()
        caught_up = read is not None and read >= self.producer.sent and not backlog
        self._drained_polls = self._drained_polls + 1 if caught_up else 0
        return self._drained_polls >= DRAINED_POLLS

    def verify(self, stopped_at: float) -> dict[str, Any]:
        """What can be checked of a sink elastream does not know: every line written was read by a committed batch
        (the query's end offsets); duplicates at the user's sink are the application's to avoid."""
        sent = self.producer.sent if self.producer is not None else 0
        read = self._last_read
        return {"records_produced": sent, "records_processed": read, "missing": 0, "unfinished": max(0, sent - read),
                "duplicates": 0, "unexpected": 0, "exactly_once": False, "verified": read == sent > 0,
                "sink": "the application's own (not checked)"}

    def stop(self) -> None:
        self._last_read = (self._read()[0] or 0) if self.runner is not None and self.metrics_port else 0
        if self.producer is not None:
            self.producer.stop()
        super().stop()
        if self.broker is not None:
            self.broker.stop()
            self.broker = None
