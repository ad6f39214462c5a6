"""One runner (identity on the cluster): the control endpoint's guards, and a real Prometheus server scraping the
runner, whose PromQL answers must be the rates and latencies the app reported for its micro-batches."""
from __future__ import annotations

import math

import pytest

from spark_apps.cluster import stop_driver
from tests.prometheus import PrometheusServer
from tests.spark.conftest import START_TIMEOUT, _start, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runner(spark_cluster, work_dir):
    r = _start(work_dir / "endpoints", "identity", spark_cluster.master_url, [
        "--profile", "sinusoid", "--rate", "150", "--peak-rate", "450", "--period", "20s", "--duration", "60s",
        "--executors", "1", "--min-executors", "1", "--max-executors", "2"])
    yield r
    stop_driver(r.proc)


def test_healthz_needs_no_token(runner):
    assert runner.call("GET", "/healthz", token=None) == (200, {"status": "ok"})


def test_calls_without_the_right_token_get_401_and_change_nothing(runner):
    before = runner.executors()
    for token in (None, "wrong", "", runner.token + "x"):
        status, doc = runner.call("GET", "/executors", token=token)
        assert status == 401 and "token" in doc["error"]
        status, doc = runner.call("PUT", "/executors", {"target": 2}, token=token)
        assert status == 401 and "token" in doc["error"]
    status, _ = runner.call("PUT", "/executors", {"target": 2}, token=None)
    after = runner.executors()
    assert after["target"] == before["target"] == 1
    assert status == 401


@pytest.mark.parametrize("body,message", [
    ({"target": 9}, "target 9 is outside 1..2"),
    ({"target": 0}, "target 0 is outside 1..2"),
    ({"target": "2"}, 'target must be an integer, got "2"'),
    ({"target": True}, "target must be an integer, got true"),
    ({"target": 1.5}, "target must be an integer, got 1.5"),
    ({"replicas": 2}, 'body must be JSON like {"target": 2}'),
    (b"{not json", 'body must be JSON like {"target": 2}'),
])
def test_bad_targets_get_400_with_a_clear_message(runner, body, message):
    raw = body if isinstance(body, bytes) else None
    status, doc = runner.call("PUT", "/executors", None if raw else body, raw=raw)
    assert (status, doc) == (400, {"error": message})
    assert runner.executors()["target"] == 1


def test_prometheus_scrapes_the_runner(runner, test_dir):
    runner.wait_batches(1, timeout=START_TIMEOUT)
    prom = PrometheusServer([f"127.0.0.1:{runner.metrics_port}"], test_dir / "prometheus").start()
    query = prom.query
    try:
        sel = '{app="identity",query="identity"}'
        wait_for(lambda: query("up{job='elastream'} == 1"), 60, "Prometheus to scrape the runner")
        # several batches' worth of samples
        series = wait_for(lambda: (lambda r: r if r and len({v for _, v in r[0]["values"]}) >= 3 else None)(
            query(f"elastream_processing_rate{sel}[5m]")), 180, "three distinct processing rates in Prometheus")
        reported = runner.progress()

        def reported_values(key):
            return [p[key] for p in runner.progress() if p[key] is not None]

        for metric, key in (("elastream_processing_rate", "processing_rate"), ("elastream_input_rate", "input_rate"),
                            ("elastream_latency_p50_seconds", "latency_p50"),
                            ("elastream_latency_p99_seconds", "latency_p99"),
                            ("elastream_batch_duration_seconds", "batch_duration")):
            stored = {float(v) for _, v in query(f"{metric}{sel}[5m]")[0]["values"]}
            known = reported_values(key)
            for value in stored:
                assert any(math.isclose(value, k, rel_tol=1e-12) for k in known), (metric, value, known)
        assert series and reported
        # the latest latency in Prometheus is a real end-to-end figure: above zero, below a minute
        p99 = float(query(f"elastream_latency_p99_seconds{sel}")[0]["value"][1])
        p50 = float(query(f"elastream_latency_p50_seconds{sel}")[0]["value"][1])
        assert 0 < p50 <= p99 < 60
        # counters and live gauges are there too
        rate = wait_for(lambda: query(f"rate(elastream_records_processed_total{sel}[1m])"), 30, "a records rate")
        assert float(rate[0]["value"][1]) > 0
        assert float(query('elastream_executors{app="identity"}')[0]["value"][1]) == 1
        assert query(f"elastream_backlog_records{sel}")
        assert float(query(f"elastream_trigger_interval_seconds{sel}")[0]["value"][1]) == 1.0
        # each executor's task time, as a counter: its load for placement (a rate in cores, above 0, at most 1 core)
        busy = wait_for(lambda: query('rate(elastream_executor_task_seconds_total{app="identity"}[1m]) > 0'), 60,
                        "a task-seconds rate per executor")
        assert busy[0]["metric"]["executor"] in runner.executors()["ids"]
        assert 0 < float(busy[0]["value"][1]) <= 1.0
    finally:
        prom.stop()


def test_replace_moves_an_executor_and_keeps_the_count(runner):
    """Placement moves an executor by decommissioning it with a replacement: a new id, the same count."""
    before = wait_for(lambda: (lambda s: s if s["current"] == 1 and s["draining"] == 0 else None)(runner.executors()),
                      START_TIMEOUT, "one settled executor")
    status, doc = runner.call("POST", "/executors/replace", {"executors": before["ids"] + ["no-such-id"]})
    assert status == 200 and doc["replaced"] == before["ids"], doc
    after = wait_for(lambda: (lambda s: s if s["current"] == 1 and s["draining"] == 0 and s["ids"] != before["ids"]
                              else None)(runner.executors()), START_TIMEOUT, "a replacement executor")
    assert after["target"] == 1
    status, doc = runner.call("POST", "/executors/replace", {"executors": []})
    assert status == 400 and "executors" in doc["error"]


def test_identity_exactly_once(runner):
    report = runner.verify_when_drained(timeout=240)
    assert report.exactly_once, report
