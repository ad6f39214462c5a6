"""End to end, attach mode through the Spark plugin: a user's own JAR application (examples/your-app/java, unmodified:
Kafka in through Spark's connector, a stateful count, the Kafka sink; built here by Maven as its user would), started
without the operator by spark-submit with the plugin on its classpath, a real Prometheus scraping the plugin, the real test control plane and the
operator. A StreamApp that attaches to it is rescaled in place on the plugin's metrics: out under the load step, in
after it, in the same driver; the query reads every line written."""
from __future__ import annotations

import json
import uuid

import pytest
import yaml

from elastream.api.policy import ElasticityPolicySpec
from elastream.api.streamapp import StreamAppSpec
from elastream.engines.spark.control import ControlEndpointClient
from elastream.engines.spark.users_app import UsersAppLocalJob
from elastream.local.manifest import LocalApp
from tests.conftest import ROOT
from tests.operator_fixtures import operator_in_process, wait_for
from tests.prometheus import PrometheusServer
from tests.your_app import MAIN_CLASS, build_wordcount_jar

pytestmark = pytest.mark.slow
APP = "your-wordcount"
LOAD_S = 150  # 50 lines/s, 300/s from 45 s to 90 s, then 50/s; its lookup waits 1 ms a word, 4 words a line: one
#              executor carries at most 250 lines/s, two 500


@pytest.fixture(scope="module")
def jar(tmp_path_factory) -> str:
    """The user's jar, built as its user builds it."""
    return str(build_wordcount_jar(tmp_path_factory.mktemp("java")))


@pytest.fixture(scope="module")
def job(jar, tmp_path_factory):
    spec = StreamAppSpec.model_validate({"engine": "spark", "spark": {
        "application": {"type": "Java", "mainClass": MAIN_CLASS, "mainApplicationFile": jar, "arguments": [
            "$(KAFKA_BOOTSTRAP_SERVERS)", "lines", "counts", "$(ELASTREAM_WORKDIR)/checkpoint"]},
        "executor": {"cores": 1, "memory": "768m"}, "executors": {"initial": 1, "min": 1, "max": 2},
        "maxParallelism": 4, "source": {"type": "kafka", "kafka": {"bootstrapServers": "kafka:9092", "topic": "lines"},
                                        "generator": {"profile": "step", "rate": 50, "peakRate": 300,
                                                      "period": "45s"}}}})
    app = LocalApp(APP, spec, ElasticityPolicySpec(), "e2e", directory=ROOT / "examples" / "your-app")
    running = UsersAppLocalJob(app, tmp_path_factory.mktemp("job"), LOAD_S)
    running.start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def prometheus(job, tmp_path_factory):
    server = PrometheusServer([f"127.0.0.1:{job.metrics_port}"], tmp_path_factory.mktemp("prometheus")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def ns(crds_installed, job, prometheus):
    k = crds_installed
    name = f"e2e-yours-{uuid.uuid4().hex[:6]}"
    k.kubectl("create", "namespace", name)
    k.kubectl("apply", "-f", str(ROOT / "charts" / "elastream" / "crds" / "kopf.dev_peerings.yaml"))
    k.kubectl("create", "secret", "generic", "plugin-token", "-n", name, f"--from-literal=token={job.token}")
    docs = [
        {"apiVersion": "elastream.io/v1alpha1", "kind": "ElasticityPolicy", "metadata": {"name": "fast"},
         "spec": {"metrics": {"prometheus": {"url": prometheus.url}, "staleAfter": "30s"}, "latencyTarget": "15s",
                  "evaluationInterval": "5s", "metricsWindow": "30s", "stabilizationWindow": "10s",
                  "scaleDown": {"delay": "15s"}, "maxRescalesPerHour": 120}},
        {"apiVersion": "elastream.io/v1alpha1", "kind": "StreamApp", "metadata": {"name": APP},
         "spec": {"engine": "spark", "policyRef": {"name": "fast"}, "spark": {
             "executors": {"initial": 1, "min": 1, "max": 2}, "maxParallelism": 4,
             "attach": {"controlURL": job.control_url, "metricsURL": job.metrics_url,
                        "tokenSecretRef": {"name": "plugin-token", "key": "token"}}}}},
    ]
    k.kubectl("apply", "-n", name, "-f", "-", input=yaml.safe_dump_all(docs))
    yield name
    k.kubectl("delete", "namespace", name, "--wait=false", check=False)


def history(k, ns, action: str) -> list[dict]:
    status = json.loads(k.kubectl("get", "streamapp", APP, "-n", ns, "-o", "json").stdout).get("status", {})
    return [d for d in status.get("history", []) if d["action"] == action and d["realized"]]


def test_the_attached_application_scales_out_and_in_in_place(crds_installed, ns, job):
    k = crds_installed
    driver = job.runner.pid
    control = ControlEndpointClient(job.control_url, job.token)
    with operator_in_process(k, ns):
        up = wait_for("a realized scale-out on the plugin's metrics", lambda: history(k, ns, "scaleUp"),
                      timeout=300, every=2)[0]
        assert up["from"] == 1 and up["to"] == 2 and up["inputs"], up
        wait_for("the driver to run 2 executors", lambda: control.executors()["current"] == 2, timeout=120)
        down = wait_for("a realized scale-in after the step", lambda: history(k, ns, "scaleDown"), timeout=300,
                        every=2)[-1]
        assert down["to"] == 1, down
        wait_for("the driver to run 1 executor", lambda: control.executors()["current"] == 1, timeout=120)
    assert job.runner.pid == driver and job.runner.poll() is None  # in place: the same driver all along


def test_the_query_reads_every_line_written(job):
    wait_for("the load to end and the query to read every line", job.finished, timeout=LOAD_S + 240, every=2)
    assert job.producer.sent > 15_000
    read = sum(job.metrics().last_samples["elastream_source_end_offsets"].values())
    assert read == job.producer.sent
