"""The other apps of the suite run on the cluster and hold exactly-once at the sink."""
from __future__ import annotations

import pytest

from spark_apps import verify
from tests.spark.conftest import START_TIMEOUT

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("app,extra", [("repartition", ["--repartition", "3"]), ("fixwindow", ["--window", "5s"])])
def test_app_exactly_once(spark_cluster, start_runner, app, extra):
    runner = start_runner(app, spark_cluster.master_url, [
        "--profile", "sinusoid", "--rate", "100", "--peak-rate", "500", "--period", "20s", "--duration", "25s",
        "--executors", "2", "--max-executors", "2", "--stop-when-done", *extra])
    assert runner.proc.wait(timeout=START_TIMEOUT + 60) == 0, runner.log_tail()  # --stop-when-done: drained
    report = verify.check(runner.checkpoint, runner.sink)
    assert report.exactly_once, report
    assert report.produced > 5000
