"""End to end: every query of the chart's Grafana dashboard returns data from a real Prometheus that scrapes a real
local PySpark job (attach mode) and the operator's own /metrics while the operator keeps the job elastic; the
desired executors the dashboard shows are the operator's decision (status.desiredExecutors).

The job and the StreamApp's namespace are tests/e2e/test_operator_spark.py's fixtures, imported: module-scoped
fixtures are instantiated per module, so this module runs a job of its own. Its Prometheus is its own too: it also
scrapes the operator."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from prometheus_client import start_http_server

from spark_apps.cluster import free_port
from tests.dashboard import DASHBOARD, panel_queries
from tests.e2e.test_operator_spark import APP, app_status, job, ns  # noqa: F401 - job and ns are fixtures
from tests.operator_fixtures import operator_in_process, wait_for
from tests.prometheus import PrometheusServer, prometheus_binary

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def operator_metrics():
    """The operator runs in this process (kopf's KopfRunner), so its metrics live in this process' default registry:
    serve that on a port of our own (the operator serves its /metrics once per process, maybe for an earlier test)."""
    port = free_port()
    server, thread = start_http_server(port, addr="127.0.0.1")
    yield f"127.0.0.1:{port}"
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def prometheus(job, operator_metrics, tmp_path_factory):  # noqa: F811 - the ns fixture reads this Prometheus
    server = PrometheusServer([f"127.0.0.1:{job.metrics_port}", operator_metrics],
                              tmp_path_factory.mktemp("prometheus")).start()
    yield server
    server.stop()


def value(result: list) -> float:
    return float(result[0]["value"][1])


def test_every_dashboard_query_returns_data(crds_installed, ns, prometheus):  # noqa: F811
    k = crds_installed
    # the job's metrics carry no namespace label here (Prometheus scrapes a local process): namespace ".*"
    queries = panel_queries(DASHBOARD, app=APP, rate_interval="1m")
    with operator_in_process(k, ns):
        wait_for("the operator's first evaluation", lambda: app_status(k, ns).get("status", {}).get("desiredExecutors"),
                 timeout=300, every=2)
        for title, expr in queries:
            hint = ("\ncontrollers/autoscaling.py must set controllers.metrics.DESIRED_EXECUTORS at each evaluation"
                    if "elastream_desired_executors" in expr else "")
            try:
                wait_for(f"data for {title!r}: {expr}", lambda e=expr: prometheus.query(e), timeout=180, every=2)
            except AssertionError as err:
                raise AssertionError(f"{err}{hint}") from None
        (desired,) = [e for _, e in queries if "elastream_desired_executors" in e]
        wait_for("the dashboard's desired executors to be status.desiredExecutors", lambda: value(
            prometheus.query(desired)) == app_status(k, ns)["status"]["desiredExecutors"], timeout=60, every=1)
        (current,) = [e for t, e in queries if "elastream_executors{" in e]
        assert 1 <= value(prometheus.query(current)) <= 2


def test_every_query_parses_as_promql(tmp_path):
    """promtool (beside the real Prometheus the project installs) parses each filled-in query as a recording rule's
    expression. Here rather than with the unit tests: on a fresh machine Prometheus is installed by this suite, after
    the unit tests are collected, and a unit test that skips without it never ran in CI."""
    promtool = Path(prometheus_binary()).with_name("promtool")
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:query_{i}", "expr": expr} for i, (_, expr) in enumerate(panel_queries(DASHBOARD, engine=None))]}]}
    path = tmp_path / "rules.yml"
    path.write_text(json.dumps(rules))  # JSON is YAML
    proc = subprocess.run([str(promtool), "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
