"""The driver is killed (SIGKILL to Python and its JVM, like a crashed pod) while a micro-batch is in flight, then
restarted from the checkpoint: every record is still counted exactly once."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from spark_apps.cluster import group_alive
from tests.spark.conftest import START_TIMEOUT, wait_for

pytestmark = pytest.mark.slow


def _ids(path: Path) -> list[int]:
    return [int(n) for n in os.listdir(path) if n.isdigit()] if path.exists() else []


def in_flight(checkpoint: str) -> int | None:
    """Id of a batch whose offsets are logged but whose commit is not (Spark is running it), else None."""
    offsets, commits = _ids(Path(checkpoint) / "offsets"), _ids(Path(checkpoint) / "commits")
    if offsets and max(offsets) > max(commits, default=-1):
        return max(offsets)
    return None


def test_driver_killed_mid_batch_restarts_exactly_once(spark_cluster, start_runner):
    args = ["--profile", "constant", "--rate", "400", "--duration", "90s",
            "--executors", "2", "--min-executors", "1", "--max-executors", "2"]
    first = start_runner("wordcount", spark_cluster.master_url, args, sub="first")
    first.wait_batches(2, timeout=START_TIMEOUT)
    killed_batch = wait_for(lambda: in_flight(first.checkpoint), 60, "a batch in flight")
    os.killpg(first.proc.pid, signal.SIGKILL)
    first.proc.wait(timeout=30)
    wait_for(lambda: not group_alive(first.proc.pid), 30, "the killed driver's JVM to be gone")

    second = start_runner("wordcount", spark_cluster.master_url, args, sub="second",
                          checkpoint=Path(first.checkpoint), sink=Path(first.sink))
    report = second.verify_when_drained(timeout=240)
    assert report.exactly_once, report
    assert report.produced == 400 * 90
    # the restart really replayed the interrupted batch rather than skipping it
    assert min(p["batch"] for p in second.progress()) <= killed_batch
