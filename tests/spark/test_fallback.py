"""Where executors cannot be added in place (a plain local[N] master), a new target restarts the query from its
checkpoint with N threads; nothing is lost or duplicated."""
from __future__ import annotations

import time

import pytest

from tests.spark.conftest import START_TIMEOUT, wait_for

pytestmark = pytest.mark.slow


@pytest.mark.extended
def test_restart_rescale_on_local_master(start_runner):
    runner = start_runner("identity", "local[1]", [
        "--profile", "constant", "--rate", "200", "--duration", "90s",
        "--executors", "1", "--min-executors", "1", "--max-executors", "2"])
    runner.wait_batches(2, timeout=START_TIMEOUT)
    state = runner.executors()
    assert state["mode"] == "restart" and state["current"] == 1
    began = time.monotonic()
    status, doc = runner.call("PUT", "/executors", {"target": 2})
    assert status == 200 and doc["target"] == 2
    wait_for(lambda: runner.executors()["current"] == 2, 120, "the restart with 2 threads")
    runner.wait_batches(1)
    print(f"restart rescale 1 -> 2 took {time.monotonic() - began:.1f}s to the first new batch")
    report = runner.verify_when_drained(timeout=180)
    assert report.exactly_once, report
