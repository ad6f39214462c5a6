"""End to end, Storm in attach mode: a real Storm cluster (ZooKeeper, Nimbus, two supervisors from Maven Central's
jars), a real topology with a replayable Python spout, `elastream storm-exporter` serving its metrics, a real
Prometheus scraping it, the real test control plane and the operator. The load steps up: the operator must rebalance
the component that cannot keep up, through Nimbus Thrift, and say which in the StreamApp's status. The policy asks for
placement and Nimbus runs elastream's PlanScheduler: once the topology has two workers, the operator measures the tuple
rates between executors and lays the topology out by its ETW/WTN plan with one rebalance. The last test checks that no
record was lost."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid

import pytest
import yaml

from spark_apps.cluster import free_port, stop_group
from elasticity.placement.traffic import TrafficPlan
from storm_apps import traffic, verify
from storm_apps.cluster import LocalStormCluster
from storm_apps.nimbus import NimbusClient
from storm_apps.source import read_source_state
from storm_apps.topology import APPS, submit
from tests.conftest import ROOT
from tests.dashboard import DASHBOARD, panel_queries
from tests.operator_fixtures import operator_in_process, wait_for
from tests.prometheus import PrometheusServer

pytestmark = pytest.mark.slow
APP = "storm-pipeline"
LOAD_S = 270  # long enough for the scatter, two readings and the move (about 170 s in), with room
# enrich costs 25 ms a tuple: 12/s keeps one executor 30% busy, 36/s needs two at 70% target utilization
GENERATOR = {"profile": "step", "rate": 12.0, "peak_rate": 36.0, "period": 60.0}
MAX = {"spout": 1, "parse": 4, "enrich": 4, "aggregate": 4, "sink": 1}
SHUFFLED = {s.name for s in APPS["pipeline"].stages if not s.by_word} | {"sink"}  # the components fed by shuffle


@pytest.fixture(scope="module")
def storm(tmp_path_factory):
    cluster = LocalStormCluster(supervisors=2, slots_per_supervisor=2, base_dir=tmp_path_factory.mktemp("storm"),
                                plan_scheduler=True).start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def topology(storm, tmp_path_factory):
    state = tmp_path_factory.mktemp("topology") / "state"
    submit(storm.storm_home, storm.nimbus_host, storm.nimbus_port, name=APP, app="pipeline", parallelism={},
           max_parallelism=MAX, workers=1, generator=GENERATOR, state_dir=state, duration_s=LOAD_S)
    yield state
    try:
        NimbusClient(storm.nimbus_host, storm.nimbus_port).kill(APP)
    except ConnectionError:
        pass


@pytest.fixture(scope="module")
def exporter(storm, topology):
    """The exporter as users run it: the CLI, in its own process."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "elastream.cli", "storm-exporter", "--nimbus",
                             f"{storm.nimbus_host}:{storm.nimbus_port}", "--topology", APP, "--listen",
                             f"127.0.0.1:{port}", "--source-state", str(topology)], start_new_session=True)
    yield f"127.0.0.1:{port}"
    stop_group(proc, grace=5.0)


@pytest.fixture(scope="module")
def prometheus(exporter, tmp_path_factory):
    server = PrometheusServer([exporter], tmp_path_factory.mktemp("prometheus")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def ns(crds_installed, storm, prometheus):
    k = crds_installed
    name = f"e2e-storm-{uuid.uuid4().hex[:6]}"
    k.kubectl("create", "namespace", name)
    k.kubectl("apply", "-f", str(ROOT / "charts" / "elastream" / "crds" / "kopf.dev_peerings.yaml"))
    docs = [
        {"apiVersion": "elastream.io/v1alpha1", "kind": "ElasticityPolicy", "metadata": {"name": "storm"},
         "spec": {"algorithm": "ds2", "metrics": {"prometheus": {"url": prometheus.url}, "staleAfter": "30s"},
                  "latencyTarget": "5s", "targetUtilization": 0.7, "evaluationInterval": "10s",
                  "metricsWindow": "30s", "stabilizationWindow": "20s", "scaleDown": {"delay": "60s"},
                  "maxRescalesPerHour": 60, "placement": "elastream"}},
        {"apiVersion": "elastream.io/v1alpha1", "kind": "StreamApp", "metadata": {"name": APP},
         "spec": {"engine": "storm", "policyRef": {"name": "storm"}, "storm": {
             "application": {"builtin": "pipeline"}, "workers": {"initial": 1, "min": 1, "max": 4},
             "executorsPerWorker": 4, "maxParallelism": MAX,
             "attach": {"nimbusHost": storm.nimbus_host, "nimbusPort": storm.nimbus_port}}}},
    ]
    k.kubectl("apply", "-n", name, "-f", "-", input=yaml.safe_dump_all(docs))
    yield name
    k.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture(scope="module")
def operator(crds_installed, ns):
    """One operator for the scaling and placement tests: the placement step keeps its readings between them."""
    with operator_in_process(crds_installed, ns) as runner:
        yield runner


def app_status(k, ns) -> dict:
    return json.loads(k.kubectl("get", "streamapp", APP, "-n", ns, "-o", "json").stdout).get("status", {})


def test_prometheus_sees_every_component(prometheus, topology):
    def components():
        return {r["metric"]["component"] for r in prometheus.query(f'elastream_storm_busy_fraction{{app="{APP}"}}')}

    wait_for("busy fractions of every component in Prometheus",
             lambda: components() >= set(MAX) - {"sink"} or None, timeout=180, every=2)
    busiest = {r["metric"]["component"]: float(r["value"][1])
               for r in prometheus.query(f'elastream_storm_busy_fraction_max{{app="{APP}"}}')}
    assert set(busiest) >= set(MAX) - {"sink"}, busiest


def test_every_storm_dashboard_panel_returns_data(prometheus, topology):
    """The chart's Grafana dashboard has a row for Storm topologies: every query of it returns data for this one."""
    for title, expr in panel_queries(DASHBOARD, app=APP, engine="storm"):
        wait_for(f"data for panel {title!r}: {expr}", lambda e=expr: prometheus.query(e), timeout=120, every=2)


def test_load_step_rebalances_the_slow_component(crds_installed, ns, storm, topology, operator):
    k = crds_installed
    nimbus = NimbusClient(storm.nimbus_host, storm.nimbus_port)
    up = wait_for("a realized scale-out in the StreamApp's history", lambda: next(
        (d for d in app_status(k, ns).get("history", []) if d["action"] == "scaleUp" and d["realized"]), None),
        timeout=300, every=2)
    assert "enrich" in up["reason"], up  # the 25 ms bolt is the one that cannot keep up
    # ACTIVE in the same read: a later rebalance (a move, another rescale) leaves a snapshot REBALANCING for a while
    wait_for("Nimbus to run enrich on more executors, ACTIVE", lambda: (t := nimbus.topology(APP))
             and t.executors()["enrich"] > 1 and t.status == "ACTIVE", timeout=120)
    events = k.kubectl("get", "events", "-n", ns, "--field-selector", f"involvedObject.name={APP}", "-o",
                       "json").stdout
    assert "enrich" in events and "Rescaled" in events
    # the rebalance restarts the workers: their metrics are gone for a while, which is expected (AwaitingMetrics, a
    # Normal event), not a fault (a MetricsUnavailable warning) — unless it outlasts guards.RESCALE_SETTLE_S
    gap = wait_for("the metrics gap after the rebalance, reported as expected", lambda: next(
        (e for e in _events(k, ns) if e["reason"] == "AwaitingMetrics"), None), timeout=120, every=2)
    assert gap["type"] == "Normal" and "after a rescale" in gap["message"], gap
    # the status is written after the event, at the end of the evaluation
    holds = wait_for("the awaited metrics in the status history", lambda: [
        d for d in app_status(k, ns)["history"]
        if d["time"] > up["time"] and d["action"] == "hold" and "metrics" in d["reason"]], timeout=30, every=1)
    assert all("after a rescale: the job restarts" in d["reason"] for d in holds), holds


def _events(k, ns) -> list[dict]:
    return json.loads(k.kubectl("get", "events", "-n", ns, "--field-selector", f"involvedObject.name={APP}", "-o",
                                "json").stdout)["items"]


def test_the_operator_lays_the_topology_out_by_its_traffic_plan(crds_installed, ns, storm, topology, operator):
    """The test scatters the topology (consecutive executors on two workers on two supervisors): the operator's plan
    cuts the traffic between them, so it rebalances with it, and Nimbus's PlanScheduler runs the topology as
    planned."""
    k = crds_installed
    nimbus = NimbusClient(storm.nimbus_host, storm.nimbus_port)
    node_of_port = storm.node_of_port()
    plans = PlanLog(storm.log_dir / "nimbus.log")
    before = len(plans.placed())
    scattered = wait_for("the topology scattered over both supervisors", lambda: _scatter(nimbus, node_of_port),
                         timeout=120, every=5)
    # the scatter's own plan, placed in full by PlanScheduler (what the test controls: the autoscaler may rebalance
    # before or after it, and PlanScheduler then logs a stale plan's partial count)
    assert scattered in plans.placed()[before:], (scattered, plans.placed())
    after_scatter = len(plans.placed())
    fed = FedSinceNow(nimbus)  # polled with the move: the operator may move the topology before its workers report

    def moved_as_planned():
        moved = [e["message"] for e in json.loads(k.kubectl(
            "get", "events", "-n", ns, "--field-selector", f"involvedObject.name={APP},reason=ExecutorsMoved", "-o",
            "json").stdout)["items"]]
        placement = app_status(k, ns).get("placement") or {}
        if not fed() or not moved or not placement.get("executors"):
            return None
        planned = _by_node(placement["executors"].items())
        live = _by_node((f"{e.component_id}[{e.executor_info.task_start}-{e.executor_info.task_end}]",
                         node_of_port[e.port]) for e in nimbus.info(APP).executors if e.component_id != "__system")
        return (placement, moved) if planned == live else None

    try:
        placement, moved = wait_for("every shuffled executor in either worker to execute tuples, the operator to move "
                                    "the topology and Nimbus to run its plan", moved_as_planned, timeout=240, every=2)
    except AssertionError as err:  # say what the operator saw and what Storm ran
        events = k.kubectl("get", "events", "-n", ns, "--field-selector", f"involvedObject.name={APP}", "-o",
                           "custom-columns=REASON:.reason,MESSAGE:.message", check=False).stdout
        load = read_source_state(topology) or {}
        raise AssertionError(f"{err}\nexecutors of shuffled components: {fed.last}\nload: {load.get('offered')} of "
                             f"{load.get('total')} records offered\n"
                             f"status.placement: {app_status(k, ns).get('placement')}\nevents:\n{events}\n"
                             f"supervisors restarted: {storm.restarts}; Nimbus lists "
                             f"{len(nimbus.cluster().supervisors)}; logs in {storm.log_dir}") from None
    cuts = [re.search(r"between nodes ([\d.]+) -> ([\d.]+)", m) for m in moved]
    assert all(c and float(c[2]) < float(c[1]) for c in cuts), moved  # each move cut inter-node traffic
    # the operator's plan, placed in full by PlanScheduler after the scatter: its executor count is the one in the
    # status the live layout matched, whatever the autoscaler did to the parallelism before
    assert len(placement["executors"]) in plans.placed()[after_scatter:], (placement, plans.placed())


class PlanLog:
    """PlanScheduler's lines in Nimbus's log: how many executors each plan it applied placed, in order."""

    def __init__(self, path):
        self.path = path

    def placed(self) -> list[int]:
        text = self.path.read_text() if self.path.exists() else ""
        return [int(n) for n in re.findall(rf"elastream plan for {APP}: (\d+) executors placed", text)]


def _scatter(nimbus, node_of_port) -> int:
    """Lay the topology out badly through PlanScheduler: executors alternate between two workers on two supervisors,
    so every link of the pipeline crosses them (retried while Nimbus is busy with another rebalance, and until every
    worker of the last one reports: a conf change while a supervisor still updates the last one can halt it). Returns
    how many executors the scatter laid out, 0 when it must be retried."""
    topology_id = nimbus.topology_id(APP)
    now = traffic.snapshot(nimbus.info_by_id(topology_id))
    if not now.executors or set(now.emitted) != set(now.executors):
        return 0
    executors = sorted(now.executors)
    supervisors = sorted(set(node_of_port.values()))[:2]
    scattered = TrafficPlan({t: i % 2 for i, t in enumerate(executors)}, dict(enumerate(supervisors)))
    try:
        traffic.realize(nimbus, APP, topology_id, scattered, lambda host, port: node_of_port[port], workers=2,
                        timeout_s=60)
    except (ConnectionError, TimeoutError):
        return 0
    return len(executors)


class FedSinceNow:
    """Whether every executor of a component fed by shuffle grouping has executed tuples since this was made, in a
    layout that spreads such a component over two workers. Storm 2's default shuffle is locality-aware: the
    executors in the other worker than their sender would get none, and a scale-out that adds them changes nothing
    (storm_apps.topology.LOAD_AWARE_OFF). Counts are cumulative from now, not a rate over a window: a worker reports
    its counters every 10 s on its own phase, so a 10-s window can miss a worker that is fed."""

    def __init__(self, nimbus):
        self.nimbus = nimbus
        self.base = self._executed()
        self.seen = False
        self.last: dict = {}  # (component, tasks, port) -> tuples executed since, as last read

    def _executed(self) -> dict:
        snap = traffic.snapshot(self.nimbus.info(APP))
        return {(e.component, t, e.host, e.port): sum(snap.executed.get(t, {}).values())
                for t, e in snap.executors.items() if e.component in SHUFFLED}

    def __call__(self) -> bool:
        if not self.seen:
            # an executor new to a slot counts from zero
            since = {k: traffic.counter_delta(n, self.base.get(k, 0)) for k, n in self._executed().items()}
            self.last = {(c, t, port): n for (c, t, _, port), n in since.items()}
            spread = any(len({(h, p) for (c, _, h, p) in since if c == comp}) > 1 for comp in SHUFFLED)
            self.seen = spread and all(n > 0 for n in since.values())  # spread: else it proves nothing
        return self.seen


def _by_node(pairs) -> set[frozenset[str]]:
    """Executors grouped by node, as a set of groups (node names differ: status has Nimbus's, the test its own)."""
    groups: dict[str, set[str]] = {}
    for executor, node in pairs:
        groups.setdefault(node, set()).add(executor)
    return {frozenset(g) for g in groups.values()}


def test_nothing_lost(topology):
    """After the load ends and the topology drains, every record the source emitted reached the sink."""
    def drained():
        s = read_source_state(topology) or {}
        return s.get("total") is not None and s.get("acked", -1) >= s["total"] and s.get("pending") == 0

    deadline = LOAD_S + 240
    wait_for("the topology to drain", drained, timeout=deadline, every=2)
    check = verify.check(topology)
    assert check.produced == read_source_state(topology)["total"] > 0
    assert check.missing == 0, check


def test_a_supervisor_that_halts_is_started_again(storm):
    """Storm's daemons are fail-fast: a supervisor that dies (here SIGKILL, as its own halt would) is started again
    with its state, and Nimbus lists it again."""
    nimbus = NimbusClient(storm.nimbus_host, storm.nimbus_port)
    before = storm.restarts.get("supervisor-1", 0)
    old = next(d for d in storm.daemons if d.name == "supervisor-1").proc
    os.kill(old.pid, signal.SIGKILL)
    killed = time.monotonic()

    def back():
        new = next(d for d in storm.daemons if d.name == "supervisor-1").proc
        # at least once more: a supervisor may also halt by itself meanwhile
        if storm.restarts.get("supervisor-1", 0) < before + 1 or new.poll() is not None:
            return None
        uptimes = [s.uptime_secs for s in nimbus.cluster().supervisors or []]
        return len(uptimes) == 2 and min(uptimes) < time.monotonic() - killed and uptimes

    wait_for("supervisor-1 started again and listed by Nimbus", back, timeout=120, every=2)
    assert old.poll() is not None
