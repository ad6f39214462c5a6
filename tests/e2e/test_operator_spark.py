"""End to end: the real test control plane, a real Prometheus scraping a real local PySpark job (attach mode),
and the operator. The tests share one job and run in order; the last one checks exactly-once at the sink."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import pytest
import yaml

from elastream.engines.spark.control import ControlEndpointClient
from elastream.api.policy import ElasticityPolicySpec
from elastream.api.streamapp import StreamAppSpec
from elastream.engines.spark.local import SparkLocalJob as LocalJob
from elastream.local.manifest import LocalApp
from spark_apps import verify
from spark_apps.cluster import free_port
from tests.conftest import ROOT
from tests.operator_fixtures import OPERATOR, operator_in_process, wait_for
from tests.prometheus import PrometheusServer

pytestmark = pytest.mark.slow
LOAD_S = 300  # seconds of load, past the ~210 s the tests before the last need; then the job drains and the last
#                test checks the sink
APP = "wordcount"


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    spec = StreamAppSpec.model_validate({"engine": "spark", "spark": {
        "application": {"builtin": "wordcount", "recordCost": "250us"}, "executor": {"cores": 1, "memory": "768m"},
        "executors": {"initial": 1, "min": 1, "max": 2}, "maxParallelism": 4,
        "source": {"type": "generator", "generator": {"profile": "step", "rate": 300, "peakRate": 5000, "period": "60s"}}}})
    running = LocalJob(LocalApp(APP, spec, ElasticityPolicySpec(), "e2e"), tmp_path_factory.mktemp("job"), LOAD_S)
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
    name = f"e2e-{uuid.uuid4().hex[:6]}"
    k.kubectl("create", "namespace", name)
    k.kubectl("apply", "-f", str(ROOT / "charts" / "elastream" / "crds" / "kopf.dev_peerings.yaml"))
    k.kubectl("create", "secret", "generic", "wc-token", "-n", name, f"--from-literal=token={job.token}")
    docs = [
        {"apiVersion": "elastream.io/v1alpha1", "kind": "ElasticityPolicy", "metadata": {"name": "fast"},
         "spec": {"metrics": {"prometheus": {"url": prometheus.url}, "staleAfter": "20s"}, "latencyTarget": "5s",
                  "evaluationInterval": "5s", "metricsWindow": "30s", "stabilizationWindow": "10s",
                  "scaleDown": {"delay": "30s"}, "maxRescalesPerHour": 120}},
        {"apiVersion": "elastream.io/v1alpha1", "kind": "StreamApp", "metadata": {"name": APP},
         "spec": {"engine": "spark", "policyRef": {"name": "fast"}, "spark": {
             "executors": {"initial": 1, "min": 1, "max": 2}, "maxParallelism": 4,
             "attach": {"controlURL": job.control_url, "metricsURL": job.metrics_url,
                        "tokenSecretRef": {"name": "wc-token", "key": "token"}}}}},
    ]
    k.kubectl("apply", "-n", name, "-f", "-", input=yaml.safe_dump_all(docs))
    yield name
    k.kubectl("delete", "namespace", name, "--wait=false", check=False)


def app_status(k, ns) -> dict:
    return json.loads(k.kubectl("get", "streamapp", APP, "-n", ns, "-o", "json").stdout)


def condition(status: dict, type_: str) -> dict:
    return next((c for c in status.get("conditions", []) if c["type"] == type_), {})


def executors(job) -> dict:
    return ControlEndpointClient(job.control_url, job.token).executors()


def test_load_step_scales_out_in_place(crds_installed, ns, job):
    k = crds_installed
    port = free_port()
    with operator_in_process(k, ns, metrics_port=port):
        # spec.replicas from the same read as the scale-out: a later scale-in (30-s delay) writes it back to 1
        up, replicas = wait_for("a realized scale-out in the StreamApp's history", lambda: next(
            ((d, a["spec"].get("replicas")) for a in [app_status(k, ns)] for d in a.get("status", {}).get("history", [])
             if d["action"] == "scaleUp" and d["realized"]), None), timeout=300, every=2)
        assert up["from"] == 1 and up["to"] == 2 and "scale out" in up["reason"]
        assert up["inputs"], "the decision must carry the metrics it used"
        wait_for("the Spark job to run 2 executors", lambda: executors(job)["current"] == 2, timeout=120)
        yaml_text = k.kubectl("get", "streamapp", APP, "-n", ns, "-o", "yaml").stdout
        assert "scale out executors 1→2" in yaml_text or "scale out" in yaml_text
        # waited for, not read once: a metrics hold (samples missing or stale) turns it False for a while
        wait_for("MetricsAvailable=True", lambda: condition(app_status(k, ns)["status"], "MetricsAvailable")
                 .get("status") == "True", timeout=60)
        # writing spec.replicas bumps the generation; the next evaluation reports it observed
        wait_for("status.observedGeneration to catch up", lambda: (a := app_status(k, ns))["status"].get(
            "observedGeneration") == a["metadata"]["generation"], timeout=60)
        assert (replicas or 0) >= 2  # written through the scale subresource
        # the operator's own metrics count the decisions and time the rescale
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        assert re.search(r'elastream_operator_decisions_total\{action="scale",guard="\w*"\} [1-9]', text), text
        assert "elastream_operator_realize_seconds_count" in text


def test_prometheus_outage_holds_and_recovers(crds_installed, ns, job, prometheus):
    k = crds_installed
    with operator_in_process(k, ns):
        wait_for("the operator to evaluate", lambda: condition(app_status(k, ns).get("status", {}), "MetricsAvailable"))
        prometheus.stop()
        try:
            down = wait_for("MetricsAvailable=False", lambda: (c := condition(app_status(k, ns)["status"], "MetricsAvailable"))
                            and c["status"] == "False" and c, timeout=60)
            assert "Prometheus" in down["message"] and "unreachable" in down["message"]
            target = executors(job)["target"]
            # decisions made after the outage was reported: the history is capped, so its length says nothing
            since = down["lastTransitionTime"]
            later = wait_for("three evaluations after the outage", lambda: len(
                h := [d for d in app_status(k, ns)["status"]["history"] if d["time"] > since]) >= 3 and h, timeout=60)
            assert all(d["action"] == "hold" and not d["realized"] for d in later), later
            assert executors(job)["target"] == target
        finally:
            prometheus.start()
        wait_for("MetricsAvailable=True again", lambda: condition(app_status(k, ns)["status"], "MetricsAvailable")["status"]
                 == "True", timeout=90)


def test_advisor_mode_leaves_the_job_unchanged(crds_installed, ns, job):
    """Advisor mode decides and reports; the real job's executors stay where they were."""
    k = crds_installed
    k.kubectl("patch", "elasticitypolicy", "fast", "-n", ns, "--type=merge", "-p", '{"spec": {"mode": "advisor"}}')
    try:
        before = executors(job)["target"]
        started = max((d["time"] for d in app_status(k, ns).get("status", {}).get("history") or []), default="")
        with operator_in_process(k, ns):
            later = wait_for("three decisions in advisor mode", lambda: len(
                h := [d for d in app_status(k, ns)["status"].get("history") or [] if d["time"] > started]) >= 3 and h,
                timeout=90)
        assert all(not d["realized"] for d in later), later
        assert executors(job)["target"] == before, "advisor mode changed the job's executors"
    finally:
        k.kubectl("patch", "elasticitypolicy", "fast", "-n", ns, "--type=merge", "-p", '{"spec": {"mode": "auto"}}')


def operator_process(k, ns, log: Path, *args: str, priority: int | None = None) -> subprocess.Popen:
    env = {**k.env(), "ELASTREAM_METRICS_PORT": "0"}
    if priority is not None:
        env["ELASTREAM_PEERING_PRIORITY"] = str(priority)
    kopf = str(Path(sys.executable).parent / "kopf")
    with open(log, "ab") as out:
        return subprocess.Popen([kopf, "run", "--namespace", ns, *args, OPERATOR], stdout=out,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=ROOT)


def kill(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def test_operator_killed_during_rescale_converges(crds_installed, ns, job, tmp_path):
    k = crds_installed
    k.kubectl("patch", "elasticitypolicy", "fast", "-n", ns, "--type=merge", "-p", '{"spec": {"mode": "advisor"}}')
    first = operator_process(k, ns, tmp_path / "op1.log", "--standalone")
    try:
        wait_for("the operator to evaluate", lambda: "evaluated" in (tmp_path / "op1.log").read_text(), timeout=60)
        current = executors(job)["current"]
        wanted = 1 if current == 2 else 2
        k.kubectl("scale", f"streamapp/{APP}", f"--replicas={wanted}", "-n", ns)
        wait_for("the operator to start the rescale", lambda: executors(job)["target"] == wanted, timeout=60, every=0.1)
    finally:
        kill(first)  # mid-rescale: the executors have not followed yet
    second = operator_process(k, ns, tmp_path / "op2.log", "--standalone")
    try:
        wait_for("convergence", lambda: (s := app_status(k, ns)).get("status", {}).get("desiredExecutors") == wanted
                 and s["spec"]["replicas"] == wanted and executors(job)["current"] == wanted, timeout=120)
        assert app_status(k, ns)["status"]["lastDecision"]["reason"].startswith("manual override") or \
            any(d["reason"].startswith("manual override") for d in app_status(k, ns)["status"]["history"])
    finally:
        kill(second)


def test_two_replicas_exactly_one_acts(crds_installed, ns, tmp_path):
    k = crds_installed
    k.kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(
        {"apiVersion": "kopf.dev/v1", "kind": "KopfPeering", "metadata": {"name": "elastream"}}))
    logs = [tmp_path / "low.log", tmp_path / "high.log"]
    ops = [operator_process(k, ns, logs[1], "--peering", "elastream", priority=20)]
    try:
        wait_for("the first replica to evaluate", lambda: "evaluated" in logs[1].read_text(), timeout=120)
        ops.append(operator_process(k, ns, logs[0], "--peering", "elastream", priority=10))
        before = logs[1].read_text().count("evaluated")
        wait_for("the active replica to evaluate 4 more times", lambda: logs[1].read_text().count("evaluated") >= before + 4,
                 timeout=120)
        assert "evaluated" not in logs[0].read_text(), "the standby replica acted too"
        kill(ops[0])  # the active one goes: the standby takes over
        wait_for("the standby replica to take over", lambda: "evaluated" in logs[0].read_text(), timeout=120)
    finally:
        for p in ops:
            if p.poll() is None:
                kill(p)


def test_no_record_lost_or_duplicated(job):
    wait_for("the job to drain and stop", job.finished, timeout=LOAD_S + 300, every=2)
    report = verify.check(str(job.checkpoint), str(job.sink))
    assert report.produced > 100_000
    assert report.exactly_once, report
