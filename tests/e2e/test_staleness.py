"""Staleness for real: a real Prometheus holds samples of a frozen exporter (explicit timestamps, so no staleness
marker ends them); the policy's sampleTime query dates them, and the core holds instead of scaling on them.

The same numbers, served fresh, make the same policy scale out: the hold comes from the age, nothing else.
"""
from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from elastream.api.policy import ElasticityPolicySpec
from elastream.api.streamapp import StreamAppSpec
from elastream.engines.prometheus import PrometheusClient
from elastream.engines.spark.observation import PrometheusSparkSource
from elastream.policy_config import to_policy_config
from elasticity.adapters import RecordingRealizer
from elasticity.autoscaler import JobAutoscaler
from tests.operator_fixtures import wait_for
from tests.prometheus import PrometheusServer

pytestmark = pytest.mark.slow

# a job far behind: every policy wants more executors
OVERLOADED = {"elastream_input_rate": 5000, "elastream_processing_rate": 1000, "elastream_batch_duration_seconds": 1.0,
              "elastream_trigger_interval_seconds": 1.0, "elastream_latency_p50_seconds": 20.0,
              "elastream_latency_p99_seconds": 40.0, "elastream_backlog_records": 200000, "elastream_executors": 1}


class Exporter:
    """Serves OVERLOADED for two apps: `fresh` without timestamps, `frozen` stamped with a fixed past time."""

    def __init__(self, frozen_at_ms: int):
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                body = exporter.text().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.frozen_at_ms = frozen_at_ms
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.server.server_address[1]}"

    def text(self) -> str:
        lines = []
        for name, value in OVERLOADED.items():
            lines.append(f"# TYPE {name} gauge")
            lines.append(f'{name}{{app="fresh",query="q"}} {value}')
            lines.append(f'{name}{{app="frozen",query="q"}} {value} {self.frozen_at_ms}')
        return "\n".join(lines) + "\n"

    def close(self):
        self.server.shutdown()


@pytest.fixture(scope="module")
def prometheus_with_frozen_samples(tmp_path_factory):
    exporter = Exporter(frozen_at_ms=int(time.time() * 1000))
    prometheus = PrometheusServer([exporter.target], tmp_path_factory.mktemp("prometheus-stale")).start()
    try:
        yield prometheus, exporter
    finally:
        prometheus.stop()
        exporter.close()


def autoscaler(prometheus: PrometheusServer, app: str) -> tuple[JobAutoscaler, RecordingRealizer]:
    policy = ElasticityPolicySpec.model_validate({
        "algorithm": "ds2", "evaluationInterval": "5s", "metricsWindow": "30s", "stabilizationWindow": "5s",
        "metrics": {"staleAfter": "5s", "scrapeInterval": "1s", "prometheus": {"url": prometheus.url}}})
    app_spec = StreamAppSpec.model_validate({"engine": "spark", "spark": {"executors": {"initial": 1, "max": 8}}})
    source = PrometheusSparkSource(PrometheusClient(prometheus.url), policy.metrics.prometheus.queries.to_wire(), app)
    realizer = RecordingRealizer()
    return JobAutoscaler(app, to_policy_config(policy, app_spec), metrics=source, realizer=realizer), realizer


def test_a_frozen_exporter_holds_while_the_same_numbers_fresh_scale_out(prometheus_with_frozen_samples):
    prometheus, exporter = prometheus_with_frozen_samples
    wait_for("Prometheus to hold both apps' samples",
             lambda: len(prometheus.query("elastream_executors")) == 2, timeout=60)
    frozen_source = autoscaler(prometheus, "frozen")[0].metrics
    sampled = frozen_source.observe("frozen").timestamp
    assert abs(sampled - exporter.frozen_at_ms / 1000) < 0.01, "the observation is not dated by its sample"
    wait_for("the frozen samples to be older than staleAfter (5s)",
             lambda: time.time() - exporter.frozen_at_ms / 1000 > 6, timeout=30)

    frozen, frozen_realizer = autoscaler(prometheus, "frozen")
    decision = frozen.scale()
    assert decision.action == "hold" and "stale" in decision.reason, decision
    assert frozen_realizer.applied == []

    fresh, fresh_realizer = autoscaler(prometheus, "fresh")
    decision = fresh.scale()
    assert decision.action == "scale" and decision.targets["executors"] > 1, decision
    assert len(fresh_realizer.applied) == 1
