"""wordcount under a step load, rescaled 1 -> 2 -> 1 -> 2 executors in place through the control endpoint while
the query runs; the sink must hold every record counted exactly once."""
from __future__ import annotations

import json
import os
import time

import pytest

from tests.spark.conftest import START_TIMEOUT, wait_for

pytestmark = pytest.mark.slow


def _impact(progress: list[dict], put: float, settled: float) -> dict:
    """Latency around one rescale: median p99 of the 3 batches before the PUT, worst p99 and batch duration of the
    batches committed from the PUT until 2 batches after the new size settled."""
    before = [p for p in progress if p["time"] < put and p["latency_p99"] is not None][-3:]
    after_settle = [p for p in progress if p["time"] >= settled][:2]
    end = after_settle[-1]["time"] if after_settle else float("inf")
    during = [p for p in progress if put <= p["time"] <= end and p["latency_p99"] is not None]
    return {
        "p99_before": sorted(p["latency_p99"] for p in before)[len(before) // 2] if before else None,
        "batch_before": sorted(p["batch_duration"] for p in before)[len(before) // 2] if before else None,
        "p99_worst": max((p["latency_p99"] for p in during), default=None),
        "batch_worst": max((p["batch_duration"] for p in during), default=None),
    }


def _runs(values: list[int]) -> list[int]:
    out: list[int] = []
    for v in values:
        if not out or out[-1] != v:
            out.append(v)
    return out


def test_wordcount_rescales_in_place_without_loss(spark_cluster, start_runner):
    runner = start_runner("wordcount", spark_cluster.master_url, [
        "--profile", "step", "--rate", "200", "--peak-rate", "600", "--period", "30s", "--duration", "150s",
        "--executors", "1", "--min-executors", "1", "--max-executors", "2"])
    wait_for(lambda: (lambda s: s["current"] == 1 and s["draining"] == 0)(runner.executors()), START_TIMEOUT,
             "the first executor")
    # measure from a steady state: the first batches catch up with what was offered while the JVMs started
    wait_for(lambda: (lambda p: len(p) >= 3 and all(b["latency_p99"] is not None and b["latency_p99"] < 8
                                                    for b in p[-3:]))(runner.progress()),
             START_TIMEOUT, "the start-up backlog to be caught up (3 batches with p99 < 8 s)")

    steps = []
    for target in (2, 1, 2):
        before_wall = time.time()
        seconds = runner.scale(target)
        after_wall = time.time()
        runner.wait_batches(2)  # the query keeps running (and is fed) at the new size
        steps.append({"to": target, "seconds": round(seconds, 2), "put": before_wall, "settled": after_wall})
    assert runner.alive(), runner.log_tail()

    report = runner.verify_when_drained(timeout=240)
    assert report.exactly_once, report
    assert report.produced == 3 * 200 * 30 + 2 * 600 * 30  # the whole step profile

    progress = runner.progress()
    seen = _runs([p["executors"] for p in progress if p.get("executors")])
    assert _contains_in_order(seen, [1, 2, 1, 2]), f"executors per batch went {seen}"

    figures = [{**s, **_impact(progress, s["put"], s["settled"])} for s in steps]
    out = {"rescales": figures, "verify": report.__dict__,
           "batch_duration_median": sorted(p["batch_duration"] for p in progress)[len(progress) // 2]}
    print(json.dumps(out, indent=1))
    path = os.environ.get("ELASTREAM_SPARK_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"test": "rescale", **out}) + "\n")


def _contains_in_order(seq: list[int], wanted: list[int]) -> bool:
    it = iter(seq)
    return all(any(v == w for v in it) for w in wanted)
