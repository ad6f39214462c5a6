"""End to end on real pods, Storm in managed mode: Helm installs the operator, which runs the example's Storm
StreamApp as its own Storm cluster on real nodes (ZooKeeper, Nimbus with the exporter beside it, supervisors, a
submit Job), reads the topology's per-component metrics from an in-cluster Prometheus, and rebalances a component
in place, adding a supervisor pod before the rebalance that needs its slot. The walk-through of docs/storm.md:

    helm install elastream charts/elastream -n elastream-system --create-namespace --wait
    kubectl apply -f examples/kubernetes/prometheus.yaml -f examples/kubernetes-storm/

The tests share one release and one job and run in order.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from storm_apps import verify
from storm_apps.nimbus import NimbusClient
from storm_apps.source import read_source_state
from tests.conftest import ROOT
from tests.e2e import test_kubernetes as spark_walkthrough
from tests.e2e.release import diagnosed, operator_release
from tests.e2e.test_kubernetes import get, real_nodes

pytestmark = pytest.mark.slow
EXAMPLE = ROOT / "examples" / "kubernetes-storm"
PROMETHEUS = ROOT / "examples" / "kubernetes" / "prometheus.yaml"
APP, NS, RELEASE_NS = "storm-wordcount", "default", "elastream-system"
HOST_DATA = Path("/var/lib/elastream-storm-example")  # the hostPath of examples/kubernetes-storm/storage.yaml
STATE = HOST_DATA / APP / "state"  # the spout's source state and the sink (elastream.engines.storm.managed.paths)


def status(k) -> dict:
    return get(k, "streamapp", APP, "-n", NS).get("status") or {}


def condition(k, type_: str) -> dict:
    return next((c for c in status(k).get("conditions", []) if c["type"] == type_), {})


def pods(k, role: str) -> list[dict]:
    return spark_walkthrough.pods(k, role, APP)


def running(k, role: str) -> list[dict]:
    return spark_walkthrough.running(k, role, APP)


def history(k, action: str) -> list[dict]:
    return [d for d in status(k).get("history", []) if d["action"] == action and d["realized"]]


def supervisor_replicas(k) -> int:
    return get(k, "deployment", f"{APP}-supervisor", "-n", NS)["spec"].get("replicas", 0)


def nimbus(k) -> NimbusClient:
    (pod,) = running(k, "nimbus")
    return NimbusClient(pod["status"]["podIP"], 6627, timeout_s=10)  # pod IPs are routable from the host


def diagnosis(k) -> str:
    parts = [k.kubectl("get", "pods", "-A", "-o", "wide", check=False).stdout]
    st = status(k) if k.kubectl("get", "streamapp", APP, "-n", NS, check=False).returncode == 0 else {}
    parts += [f"{c['type']}={c['status']} {c['reason']}: {c['message']}" for c in st.get("conditions", [])]
    parts += [f"{d['time']} {d['action']} {d.get('current')}->{d.get('targets')} {d['reason']}"
              for d in st.get("history", [])[-8:]]
    parts.append(k.kubectl("logs", "-n", RELEASE_NS, "deploy/elastream", "--tail=40", check=False).stdout)
    parts.append(k.kubectl("logs", "-n", NS, f"job/{APP}-submit", "--tail=20", check=False).stdout)
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
def example(k, release):
    shutil.rmtree(HOST_DATA, ignore_errors=True)  # a source state left by an earlier run would be resumed
    k.kubectl("apply", "-f", str(PROMETHEUS), "-f", str(EXAMPLE))
    yield
    k.kubectl("delete", "-f", str(EXAMPLE), "-f", str(PROMETHEUS), "--ignore-not-found", "--wait=false", check=False)
    wait_for(k, "every pod of the app gone", lambda: not get(
        k, "pods", "-n", NS, "-l", f"elastream.io/app={APP}")["items"], timeout=120)


def test_the_storm_cluster_runs_as_pods_on_real_nodes_and_the_topology_is_submitted(k, example):
    wait_for(k, "Progressing TopologySubmitted", lambda: condition(k, "Progressing").get("reason") ==
             "TopologySubmitted", timeout=400)
    wait_for(k, "ZooKeeper, Nimbus and a supervisor Running", lambda: all(
        running(k, role) for role in ("zookeeper", "nimbus", "supervisor")), timeout=120)
    nodes = real_nodes(k)
    for role in ("zookeeper", "nimbus", "supervisor"):
        for p in running(k, role):
            assert p["spec"]["nodeName"] in nodes, f"{p['metadata']['name']} is on {p['spec']['nodeName']}"
    state = wait_for(k, "the topology ACTIVE on Nimbus", lambda: (t := nimbus(k).topology(APP)) and
                     t.status == "ACTIVE" and t, timeout=120)
    tasks = {c.name: c.tasks for c in state.components}
    assert tasks["split"] == 4 and tasks["count"] == 4, f"tasks = maxParallelism: {tasks}"
    assert supervisor_replicas(k) == 1  # one worker, one slot per supervisor


def test_metrics_flow_and_the_app_becomes_ready(k, example):
    # both from one status read: a rebalance's settling hold keeps Ready but turns MetricsAvailable False for a while
    wait_for(k, "Ready and MetricsAvailable", lambda: (conds := {c["type"]: c["status"] for c in status(k).get(
        "conditions", [])}) and conds.get("Ready") == conds.get("MetricsAvailable") == "True", timeout=300)


def test_load_step_scales_a_component_out_with_a_supervisor_added_first(k, example):
    # the latest realized rescale, and a scale-out: the layout Nimbus runs now (an earlier one may have been undone)
    up = wait_for(k, "a realized scale-out, the latest rescale in status.history", lambda: (r := [
        d for d in status(k).get("history", []) if d["realized"] and d["action"] in ("scaleUp", "scaleDown")])
        and r[-1]["action"] == "scaleUp" and r[-1], timeout=480)
    moved = {c: n for c, n in up["targets"].items() if up["current"].get(c) != n}
    assert moved and all(n > up["current"][c] for c, n in moved.items()), up
    assert any(c in up["reason"] for c in moved), f"the reason names the component: {up['reason']}"
    workers = nimbus(k).topology(APP).workers
    assert workers >= 2, f"more executors than one worker holds: {workers} workers"
    assert supervisor_replicas(k) >= workers and len(running(k, "supervisor")) >= workers
    layout = {c.name: c.executors for c in nimbus(k).topology(APP).components}
    assert all(layout[c] == n for c, n in moved.items()), (layout, moved)
    events = get(k, "events", "-n", NS, "--field-selector", f"involvedObject.name={APP}")["items"]
    rescaled = [e for e in events if e["reason"] == "Rescaled"]
    assert any(c in e["message"] for e in rescaled for c in moved), rescaled
    RECORDED["after_scale_out"] = read_source_state(STATE)["next_seq"]


RECORDED: dict[str, int] = {}


def test_nothing_emitted_before_the_rebalance_is_lost(k, example):
    """Every record emitted up to the scale-out is acked (the committed offset passes it: tuples lost in restarted
    workers were replayed) and whole at the sink, written by workers on several supervisor pods."""
    mark = RECORDED["after_scale_out"]
    wait_for(k, f"the committed offset past {mark}", lambda: read_source_state(STATE)["committed"] >= mark,
             timeout=180)
    committed = read_source_state(STATE)["committed"]
    report = verify.check(STATE, upto=committed)
    assert report.produced == committed > 1000 and report.missing == 0, report
    assert len(list(STATE.glob("sink-*.txt"))) >= 1


@pytest.mark.extended  # CI time (2026-12-06): 230 s; Storm scale-out stays, on these real nodes, in make test
@pytest.mark.timeout(900)  # its wait outlasts the suite's 600 s: let it fail with its diagnosis
def test_load_drop_scales_in_and_idle_supervisors_go(k, example):
    # a scale-in lands in one of the step load's 150-s low phases, every 300 s: wait for three of them (a busy
    # machine's metrics lag can make it miss one; it failed at 480 s once beside a benchmark)
    down = wait_for(k, "a realized scale-in in status.history", lambda: history(k, "scaleDown"), timeout=780)[0]
    assert sum(down["targets"].values()) < sum(down["current"].values()), down
    # the supervisors are exactly those the workers need (one slot each), whatever the policy did since
    wait_for(k, "as many supervisor pods as workers", lambda: (w := nimbus(k).topology(APP).workers) ==
             supervisor_replicas(k) == len(pods(k, "supervisor")) and w, timeout=180)
