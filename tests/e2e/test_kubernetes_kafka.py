"""End to end on real pods, a user's own PySpark application reading Kafka, managed by the operator: a KRaft broker
runs as a pod of the test cluster (examples/kubernetes-kafka/kafka.yaml, the project's Kafka image), the test writes lines of words to its 4-partition
topic from the host, and the operator installed by Helm runs examples/kubernetes-kafka/ — examples/your-app/
wordcount.py, unchanged, started by spark-submit with elastream's Spark plugin — and scales its executors on the
topic's consumer lag:

    helm install elastream charts/elastream -n elastream-system --create-namespace --wait
    kubectl apply -f examples/kubernetes-kafka/kafka.yaml      # then create the topic words (4 partitions)
    kubectl apply -f examples/kubernetes/prometheus.yaml -f examples/kubernetes-kafka/

Beside it, the same word count as a user's JAR (examples/your-app/java, built here by Maven, its jar put on the
shared volume as a user would) runs as a second StreamApp on the same topic and policy, and must do all the same.

The load is the test's own: low once the job is Ready (the policy in advisor mode, so that the job's start-up does
not decide), then a step one executor cannot carry (the application's lookup waits 200 us a word, 4 words a line),
with the policy switched to auto, then low again. The job scales out and back in with the same driver; then the
producer stops and the job must read the topic to its end, and the counts it wrote to its own output topic must be
every word's count. The tests share one release, broker and job and run in order.
"""
from __future__ import annotations

import json
import shutil
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import yaml
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from spark_apps import records, verify
from tests.conftest import ROOT
from tests.dashboard import DASHBOARD as CHART_DASHBOARD, panel_queries
from tests.e2e import test_kubernetes as spark_walkthrough
from tests.e2e.release import diagnosed, operator_release
from tests.e2e.test_kubernetes import get, prometheus_url, real_nodes
from tests.your_app import JAR_NAME, MAIN_CLASS, build_wordcount_jar

pytestmark = pytest.mark.slow
EXAMPLE = ROOT / "examples" / "kubernetes-kafka"
PROMETHEUS = ROOT / "examples" / "kubernetes" / "prometheus.yaml"
APP, NS, RELEASE_NS, POLICY = "kafka-wordcount", "default", "elastream-system", "kafka-lag"
HOST_DATA = Path("/var/lib/elastream-kafka-example")  # the hostPath of examples/kubernetes-kafka/storage.yaml
BROKER = EXAMPLE / "kafka.yaml"  # the broker's ConfigMap, Pod and Service, in the project's Kafka image
PORT = 9092
TOPIC, PARTITIONS, COUNTS = "words", 4, "counts"  # COUNTS: the application's output topic
JAR_APP, JAR_COUNTS = "kafka-wordcount-jar", "counts-jar"  # the JAR application and its output topic
JAR_LOOKUP_US = 400  # its lookup per word: one executor carries at most 625 lines/s, two 1250: under HIGH_RATE both
#                     fall behind (the lag keeps saying "more"), and after the drop two drain the backlog quickly
APPS = (APP, JAR_APP)
LOW_RATE, HIGH_RATE = 200.0, 1500.0  # lines/s: the lookup alone lets one executor carry at most 1250/s
# after the step: well under what one executor carries even on a busy machine (measured: 595 lines/s per executor
# with this module alone, 210/s in a whole e2e run, where 200/s kept two executors rightly)
DROP_RATE = 50.0


class WordsProducer:
    """Lines of words (spark_apps.records: record i is lines([i])) into the topic at `rate` records/s, record i to
    partition i mod PARTITIONS, idempotent; a thread until stop(), which flushes and counts what was not acked."""

    def __init__(self, bootstrap: str, rate: float):
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 20})
        self.rate, self.sent, self.failed = rate, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="words-producer", daemon=True)

    def start(self) -> "WordsProducer":
        self._thread.start()
        return self

    @property
    def started(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        owed, last = 0.0, time.monotonic()
        while not self._stop.wait(0.05):
            now = time.monotonic()
            owed += (now - last) * self.rate
            last, n = now, int(owed)
            owed -= n
            for seq, line in zip(range(self.sent, self.sent + n), records.lines(np.arange(self.sent, self.sent + n))):
                self.producer.produce(TOPIC, line.encode(), partition=seq % PARTITIONS, on_delivery=self._acked)
            self.sent += n
            self.producer.poll(0)

    def _acked(self, err, _msg) -> None:
        if err is not None:
            self.failed += 1

    def stop(self, flush_timeout_s: float = 60.0) -> int:
        """Stop sending and wait for the acks: returns how many records are still unacknowledged (0: every record
        sent is in the topic, or counted in `failed`). Safe to call twice."""
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(timeout=10)
        if self.producer is None:
            return 0
        left = self.producer.flush(flush_timeout_s)
        self.producer = None  # its client goes with it (it would reconnect to the broker's address after the pod)
        return left

def status(k, app: str = APP) -> dict:
    return get(k, "streamapp", app, "-n", NS).get("status") or {}


def condition(k, type_: str, app: str = APP) -> dict:
    return next((c for c in status(k, app).get("conditions", []) if c["type"] == type_), {})


def running(k, role: str, app: str = APP) -> list[dict]:
    return spark_walkthrough.running(k, role, app)


def pods(k, role: str, app: str = APP) -> list[dict]:
    return spark_walkthrough.pods(k, role, app)


def realized(k, action: str, app: str = APP) -> list[dict]:
    return [d for d in status(k, app).get("history", []) if d["action"] == action and d["realized"]]


def query(k, expr: str) -> list[float]:
    url = f"{prometheus_url(k)}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    return [float(r["value"][1]) for r in json.load(urllib.request.urlopen(url, timeout=10))["data"]["result"]]


def read_offsets(app: str = APP) -> int:
    """Records the job's committed batches read: the Kafka offsets in its checkpoint, summed over partitions."""
    offsets = verify.committed_offsets(str(HOST_DATA / app / "checkpoint")) or {}
    return sum(int(o) for o in offsets.get(TOPIC, {}).values())


def diagnosis(k) -> str:
    parts = [k.kubectl("get", "pods", "-A", "-o", "wide", check=False).stdout]
    for app in APPS:
        st = status(k, app) if k.kubectl("get", "streamapp", app, "-n", NS, check=False).returncode == 0 else {}
        parts.append(f"--- {app}")
        parts += [f"{c['type']}={c['status']} {c['reason']}: {c['message']}" for c in st.get("conditions", [])]
        parts += [f"{d['time']} {d['action']} {d.get('from')}->{d.get('to')} {d['reason']} {d.get('inputs')}"
                  for d in st.get("history", [])[-6:]]
        try:
            parts.append("Prometheus: " + "; ".join(f"{e} = {query(k, e)}" for e in (
                f'max_over_time(elastream_backlog_records{{streamapp="{app}"}}[5m])',
                f'elastream_input_rate{{streamapp="{app}"}}', f'elastream_processing_rate{{streamapp="{app}"}}')))
        except Exception as err:  # noqa: BLE001 - a diagnosis must not hide the failure it explains
            parts.append(f"Prometheus not read: {err}")
        parts.append(k.kubectl("logs", "-n", NS, f"{app}-driver", "--tail=30", check=False).stdout)
    parts.append(k.kubectl("logs", "-n", RELEASE_NS, "deploy/elastream", "--tail=30", check=False).stdout)
    return "\n".join(parts)


wait_for = diagnosed(diagnosis)


@pytest.fixture(scope="module")
def k(real_cluster, crds_installed):
    yield real_cluster


@pytest.fixture(scope="module")
def release(k):
    with operator_release(k) as namespace:
        yield namespace


@pytest.fixture(scope="module")
def broker(k):
    """The broker pod on a real node, and its topic; yields the address the host reaches it at (its pod IP)."""
    k.kubectl("apply", "-f", str(BROKER))  # simulated nodes are tainted: it runs on a real node
    try:
        ready = wait_for(k, "the kafka pod Ready", lambda: next(
            (p for p in get(k, "pods", "-n", NS, "-l", "app.kubernetes.io/name=kafka")["items"]
             if any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))),
            None), timeout=180)
        bootstrap = f"{ready['status']['podIP']}:{PORT}"
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
        # as the walk-through says: Kafka's own tool, in the broker's image
        k.kubectl("exec", "-n", NS, "kafka", "--", "java", "-cp", "/opt/kafka/lib/*",
                  "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", "localhost:9092", "--create",
                  "--topic", TOPIC, "--partitions", str(PARTITIONS))
        yield ready, admin, bootstrap
    finally:
        k.kubectl("delete", "-f", str(BROKER), "--ignore-not-found", "--wait=false", check=False)


@pytest.fixture(scope="module")
def producer(broker):
    """Not started: the first test starts it once the job reads (a backlog at start would be caught up, perhaps by
    a scale-out, before the step the test makes)."""
    _, _, bootstrap = broker
    words = WordsProducer(bootstrap, LOW_RATE)
    yield words
    words.stop(flush_timeout_s=5)


@pytest.fixture(scope="module")
def jar(tmp_path_factory) -> Path:
    return build_wordcount_jar(tmp_path_factory.mktemp("java"))


def jar_app(example_app: dict) -> dict:
    """The example's StreamApp turned into the JAR application's: its jar on the shared volume (where the user put
    it), its own output topic and checkpoint, and smaller CPU requests so both apps fit the two 2-core nodes."""
    doc = json.loads(json.dumps(example_app))
    doc["metadata"]["name"] = JAR_APP
    spark = doc["spec"]["spark"]
    spark["application"] = {
        "type": "Java", "mainClass": MAIN_CLASS, "mainApplicationFile": f"/var/lib/elastream/jars/{JAR_NAME}",
        "arguments": ["$(KAFKA_BOOTSTRAP_SERVERS)", TOPIC, JAR_COUNTS,
                      f"/var/lib/elastream/{JAR_APP}/checkpoint", str(JAR_LOOKUP_US)]}
    spark["executor"] = {"cores": 1, "memory": "768m"}
    spark["conf"] = {"spark.kubernetes.executor.request.cores": "250m", "spark.kubernetes.driver.request.cores": "250m"}
    return doc


@pytest.fixture(scope="module")
def example(k, release, broker, producer, jar):
    shutil.rmtree(HOST_DATA, ignore_errors=True)  # a checkpoint left by an earlier run would be resumed
    (HOST_DATA / "jars").mkdir(parents=True, exist_ok=True)
    shutil.copy(jar, HOST_DATA / "jars" / JAR_NAME)  # on the shared volume, as a user would copy it
    docs = [d for d in yaml.safe_load_all((EXAMPLE / "wordcount.yaml").read_text()) if d]
    for doc in docs:  # advisor until the load step (test_consumer_lag_scales_the_executors_out_in_place)
        if doc["kind"] == "ElasticityPolicy":
            doc["spec"]["mode"] = "advisor"
    docs.append(jar_app(next(d for d in docs if d["kind"] == "StreamApp")))
    k.kubectl("apply", "-f", str(PROMETHEUS), "-f", str(EXAMPLE / "storage.yaml"))
    k.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))
    yield
    k.kubectl("delete", "streamapp", JAR_APP, "-n", NS, "--ignore-not-found", "--wait=false", check=False)
    k.kubectl("delete", "-f", str(EXAMPLE), "-f", str(PROMETHEUS), "--ignore-not-found", "--wait=false", check=False)
    for app in APPS:
        wait_for(k, f"every pod of {app} gone", lambda app=app: not get(
            k, "pods", "-n", NS, "-l", f"elastream.io/app={app}")["items"], timeout=120)


def test_the_broker_runs_in_the_cluster_and_the_app_reads_its_partitions(k, broker, producer, example):
    pod, admin, bootstrap = broker
    assert pod["spec"]["nodeName"] in real_nodes(k)
    meta = admin.list_topics(TOPIC, timeout=10)
    assert [f"{b.host}:{b.port}" for b in meta.brokers.values()] == [bootstrap]  # it advertises its pod IP
    assert len(meta.topics[TOPIC].partitions) == PARTITIONS
    for app in APPS:
        wait_for(k, f"StreamApp {app} Ready", lambda app=app: condition(k, "Ready", app).get("status") == "True",
                 timeout=300)
        wait_for(k, f"{app}'s driver and an executor Running", lambda app=app: running(k, "driver", app) and running(
            k, "executor", app), timeout=120)
        for p in running(k, "driver", app) + running(k, "executor", app):
            assert p["spec"]["nodeName"] in real_nodes(k), f"{p['metadata']['name']} is on {p['spec']['nodeName']}"
    # the example's pod fields: the driver read the broker's address from its envFrom (the job reads, below);
    # Spark made each executor from the operator's template, keeping its env and labels
    executors = running(k, "executor")
    assert executors
    for p in executors:
        assert p["metadata"]["labels"]["team"] == "streams"
        assert "KAFKA_BOOTSTRAP_SERVERS" in [e["name"] for e in p["spec"]["containers"][0].get("env", [])]
    # the partitions bound the useful parallelism: the plugin exports them, Prometheus scrapes them
    for app in APPS:
        wait_for(k, f"elastream_source_partitions == 4 in Prometheus for {app}", lambda app=app: query(
            k, f'elastream_source_partitions{{streamapp="{app}"}}') == [PARTITIONS], timeout=120, every=5)
    producer.start()
    for app in APPS:
        wait_for(k, f"{app} reading the topic", lambda app=app: read_offsets(app) > 0, timeout=120)


def max_lag(window_s: float) -> str:
    return f'max_over_time(elastream_backlog_records{{streamapp="{APP}"}}[{int(window_s)}s])'


def test_consumer_lag_scales_the_executors_out_in_place(k, producer, example):
    """The step outruns one executor: the lag (elastream_backlog_records: the broker's offsets, asked by the plugin,
    less those the last batch processed) grows with it, and the operator, switched from advisor to auto at the step, adds the second
    executor without replacing the driver. The advisor minute before keeps the job's start-up (slow first batches,
    the start-up backlog) out of the decision: the metrics window it decides on holds only the steady low load."""
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for app in APPS:
        wait_for(k, f"six advisor evaluations of the steady low load ({app})", lambda app=app: len(
            [d for d in status(k, app).get("history", []) if d["time"] >= since]) >= 6, timeout=180, every=5)
        assert not realized(k, "scaleUp", app), realized(k, "scaleUp", app)
    low = query(k, max_lag(60)) or [0.0]
    drivers = {app: pods(k, "driver", app)[0]["metadata"]["uid"] for app in APPS}
    step_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    started = time.monotonic()
    producer.rate = HIGH_RATE
    k.kubectl("patch", "elasticitypolicy", POLICY, "-n", NS, "--type=merge", "-p", '{"spec": {"mode": "auto"}}')
    for app in APPS:
        up = wait_for(k, f"a realized scale-out of {app} in status.history", lambda app=app: realized(
            k, "scaleUp", app), timeout=420)[0]
        assert (up["from"], up["to"]) == (1, 2) and up["time"] >= step_at, json.dumps(up)
        wait_for(k, f"2 executor pods of {app} Running", lambda app=app: len(running(k, "executor", app)) == 2,
                 timeout=180)
    assert {app: pods(k, "driver", app)[0]["metadata"]["uid"] for app in APPS} == drivers, "a driver was replaced"
    # the lag grew with the step: what arrives during a batch waits, at 7.5 × the low rate
    wait_for(k, f"a lag since the step above twice the low load's ({low[0]:.0f})", lambda: (
        seen := query(k, max_lag(time.monotonic() - started + 10))) and seen[0] > 2 * max(low[0], LOW_RATE),
        timeout=120, every=5)


def test_every_dashboard_panel_shows_the_users_apps(k, example):
    """The chart's Grafana dashboard reads a plugin-instrumented application as it reads elastream's runner: every
    panel's query returns data for both apps (after the scale-out: the desired executors have been decided)."""
    for app in APPS:
        for title, expr in panel_queries(CHART_DASHBOARD, app=app, namespace=NS):
            wait_for(k, f"data for panel {title!r} of {app}: {expr}", lambda e=expr: query(k, e), timeout=120, every=5)


def test_the_load_drop_scales_back_in_with_the_same_driver(k, producer, example):
    drivers = {app: _identity(pods(k, "driver", app)[0]) for app in APPS}
    dropped_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    producer.rate = DROP_RATE
    for app in APPS:
        down = wait_for(k, f"a realized scale-in of {app} after the load dropped", lambda app=app: [
            d for d in realized(k, "scaleDown", app) if d["time"] >= dropped_at], timeout=480, every=5)[-1]
        assert down["to"] == 1, json.dumps(down)
        wait_for(k, f"1 executor pod of {app} left", lambda app=app: len(pods(k, "executor", app)) == 1, timeout=180)
    assert {app: _identity(pods(k, "driver", app)[0]) for app in APPS} == drivers, "a driver was replaced or restarted"


def _identity(pod: dict) -> tuple[str, int]:
    return pod["metadata"]["uid"], _restarts(pod)


def _restarts(pod: dict) -> int:
    return sum(c.get("restartCount", 0) for c in pod["status"].get("containerStatuses", []))


def test_the_job_reads_the_topic_to_its_end_counting_every_word_once(k, broker, producer, example):
    assert producer.stop() == 0, "records still unacknowledged after 60 s"
    sent = producer.sent
    assert producer.failed == 0 and sent > 0
    _, _, bootstrap = broker
    expected = Counter(records.word(int(i)) for i in records.word_ids(np.arange(sent)).ravel())
    for app, counts in ((APP, COUNTS), (JAR_APP, JAR_COUNTS)):
        wait_for(k, f"{app}'s checkpoint's Kafka offsets at the {sent} records sent", lambda app=app: read_offsets(
            app) == sent, timeout=300, every=3)
        final = latest_counts(bootstrap, counts)  # the application's own sink: its last count of each word
        assert final == dict(expected), {w: (final.get(w), n) for w, n in expected.items() if final.get(w) != n}


def latest_counts(bootstrap: str, topic: str) -> dict[str, int]:
    """The counts topic read from its start to its end: the last count written for each word (the application
    writes a word's running count each batch it changes, in update mode)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "e2e-check", "enable.auto.commit": False,
                         "log_level": 2})
    try:
        parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts}
        consumer.assign([TopicPartition(topic, p, 0) for p in parts])
        latest: dict[str, int] = {}
        positions = {p: 0 for p in parts}
        deadline = time.monotonic() + 120
        while any(positions[p] < ends[p] for p in parts) and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                continue
            latest[msg.key().decode()] = int(msg.value().decode())
            positions[msg.partition()] = msg.offset() + 1
        return latest
    finally:
        consumer.close()
