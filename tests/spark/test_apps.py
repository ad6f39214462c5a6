"""The other apps of the suite run on the cluster side by side (one executor each) and hold exactly-once."""
from __future__ import annotations

import pytest

from spark_apps import verify
from tests.spark.conftest import START_TIMEOUT

pytestmark = pytest.mark.slow


def test_repartition_and_fixwindow_exactly_once(spark_cluster, start_runner):
    load = ["--profile", "sinusoid", "--rate", "100", "--peak-rate", "500", "--period", "20s", "--duration", "25s",
            "--executors", "1", "--max-executors", "1", "--stop-when-done",
            "--max-records-per-batch", "1000"]  # admission control: many batches even if start-up is slow
    runners = [start_runner("repartition", spark_cluster.master_url, [*load, "--repartition", "3"], sub="repartition"),
               start_runner("fixwindow", spark_cluster.master_url, [*load, "--window", "5s"], sub="fixwindow")]
    for runner in runners:
        assert runner.proc.wait(timeout=START_TIMEOUT + 120) == 0, runner.log_tail()  # --stop-when-done: drained
        report = verify.check(runner.checkpoint, runner.sink)
        assert report.exactly_once, (runner.app, report)
        assert report.produced > 5000 and report.batches >= 5, report
