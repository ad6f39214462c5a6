"""End to end on real pods: Helm installs the operator, which runs the example's managed Spark StreamApp on real
nodes and rescales its executor pods in place. The walk-through of docs/kubernetes.md, as a new user would take it:

    helm install elastream charts/elastream -n elastream-system --create-namespace --wait
    kubectl apply -f examples/kubernetes/

The tests share one release and one job and run in order.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from spark_apps import verify
from tests.conftest import ROOT
from tests.operator_fixtures import wait_for as _wait_for

pytestmark = pytest.mark.slow
CHART = ROOT / "charts" / "elastream"
EXAMPLES = ROOT / "examples" / "kubernetes"
APP, NS, RELEASE_NS = "wordcount", "default", "elastream-system"
REAL = "elastream.io/real-node"
HOST_DATA = "/var/lib/elastream-example"  # the hostPath of examples/kubernetes/storage.yaml
POLICY = "latency-10s"
# a plan every 15 s from the last 2 minutes of load (the chart's defaults: every minute, from 10 minutes)
PLACEMENT_SETTINGS = ("--set", "placement.intervalSeconds=15", "--set", "placement.windowSeconds=120",
                      "--set", "placement.stepSeconds=5")
PLANNED_NODE = "elastream.io/planned-node"


def diagnosis(k) -> str:
    """What a failing wait shows: the pods, the StreamApp's conditions and last decisions, the operator's log."""
    parts = [k.kubectl("get", "pods", "-A", "-o", "wide", check=False).stdout]
    sa = k.kubectl("get", "streamapp", APP, "-n", NS, "-o", "json", check=False)
    if sa.returncode == 0:
        st = json.loads(sa.stdout).get("status") or {}
        parts += [f"{c['type']}={c['status']} {c['reason']}: {c['message']}" for c in st.get("conditions", [])]
        parts += [f"{d['time']} {d['action']} {d.get('from')}->{d.get('to')} {d['reason']}" for d in st.get("history", [])]
        if st.get("history"):
            parts.append(f"inputs of the last decision: {st['history'][-1].get('inputs')}")
    parts.append(job_metrics_seen(k))
    log = k.kubectl("logs", "-n", RELEASE_NS, "deploy/elastream", "--tail=400", check=False).stdout.splitlines()
    parts += [line for line in log if "/healthz" not in line and "evaluated " not in line][-40:]
    return "\n".join(parts)


def job_metrics_seen(k) -> str:
    """What Prometheus saw of the job over the last 10 minutes (did the load step come? was it carried?)."""
    try:
        base = prometheus_url(k)
        seen = []
        for name in ("elastream_input_rate", "elastream_processing_rate", "elastream_backlog_records",
                     "elastream_batch_duration_seconds", "elastream_executors"):
            for fn in ("min", "max"):
                expr = f'{fn}_over_time({name}{{streamapp="{APP}"}}[10m])'
                url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
                res = json.load(urllib.request.urlopen(url, timeout=10))["data"]["result"]
                seen.append(f"{fn} {name}: " + ", ".join(f"{float(r['value'][1]):.4g}" for r in res))
        return "Prometheus, last 10 min: " + "; ".join(seen)
    except Exception as err:  # noqa: BLE001 - a diagnosis must not hide the failure it explains
        return f"Prometheus not read: {err}"


def wait_for(what, check, timeout=60.0, every=0.5, k=None):
    try:
        return _wait_for(what, check, timeout=timeout, every=every)
    except AssertionError as err:
        raise AssertionError(f"{err}\n--- cluster state ---\n{diagnosis(k)}" if k is not None else str(err)) from None


def helm(k, *args, check=True, timeout=600):
    proc = subprocess.run(["helm", *args], capture_output=True, text=True, env=k.env(), timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def get(k, *args) -> dict:
    return json.loads(k.kubectl("get", *args, "-o", "json").stdout)


def app(k) -> dict:
    return get(k, "streamapp", APP, "-n", NS)


def status(k) -> dict:
    return app(k).get("status") or {}


def condition(k, type_: str) -> dict:
    return next((c for c in status(k).get("conditions", []) if c["type"] == type_), {})


def pods(k, role: str, app_name: str = APP) -> list[dict]:
    items = get(k, "pods", "-n", NS, "-l", f"elastream.io/app={app_name},elastream.io/role={role}")["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def running(k, role: str, app_name: str = APP) -> list[dict]:
    return [p for p in pods(k, role, app_name) if p["status"].get("phase") == "Running"
            and all(c.get("ready") for c in p["status"].get("containerStatuses", []))]


def real_nodes(k) -> set[str]:
    return {n["metadata"]["name"] for n in get(k, "nodes", "-l", f"{REAL}=true")["items"]}


def history(k, action: str, after: str = "") -> list[dict]:
    return [d for d in status(k).get("history", []) if d["action"] == action and d["realized"] and d["time"] >= after]


def driver_identity(k) -> tuple[str, int]:
    (driver,) = pods(k, "driver")
    return driver["metadata"]["uid"], sum(c.get("restartCount", 0) for c in driver["status"]["containerStatuses"])


@pytest.fixture(scope="module")
def k(real_cluster, crds_installed):
    """Real nodes, with the current CRDs (helm installs CRDs only where none exist, as Helm never upgrades them)."""
    yield real_cluster


@pytest.fixture(scope="module")
def release(k):
    """The operator installed by Helm, as a pod on a real node under the chart's own ServiceAccount."""
    helm(k, "install", "elastream", str(CHART), "-n", RELEASE_NS, "--create-namespace", "--wait", "--timeout", "5m",
         "--set", f"watchNamespaces={{{NS}}}", *PLACEMENT_SETTINGS)
    yield RELEASE_NS
    helm(k, "uninstall", "elastream", "-n", RELEASE_NS, "--wait", "--timeout", "2m", check=False)
    k.kubectl("delete", "namespace", RELEASE_NS, "--wait=false", check=False)


@pytest.fixture(scope="module")
def example(k, release):
    shutil.rmtree(HOST_DATA, ignore_errors=True)  # a checkpoint left by an earlier run would be resumed
    k.kubectl("apply", "-f", str(EXAMPLES))
    yield
    k.kubectl("delete", "-f", str(EXAMPLES), "--ignore-not-found", "--wait=false", check=False)


def test_operator_pod_runs_on_a_real_node_under_its_own_service_account(k, release):
    (pod,) = get(k, "pods", "-n", release, "-l", "app.kubernetes.io/name=elastream")["items"]
    assert pod["status"]["phase"] == "Running"
    assert pod["spec"]["nodeName"] in real_nodes(k)
    assert pod["spec"]["serviceAccountName"] == "elastream"


def test_streamapp_becomes_ready_with_driver_and_executor_pods_on_real_nodes(k, example):
    wait_for("StreamApp Ready", lambda: condition(k, "Ready").get("status") == "True", timeout=300, every=2, k=k)
    wait_for("the driver and an executor Running", lambda: running(k, "driver") and running(k, "executor"),
             timeout=120, every=2, k=k)
    nodes = real_nodes(k)
    for p in running(k, "driver") + running(k, "executor"):
        assert p["spec"]["nodeName"] in nodes, f"{p['metadata']['name']} is on {p['spec']['nodeName']}"


@pytest.mark.timeout(900)  # its waits outlast the suite's 600 s: let them fail with their diagnosis
def test_load_step_scales_executor_pods_out_in_place(k, example):
    uid, restarts = driver_identity(k)
    # the step load is high for 150 s every 300 s from 150 s after the job starts; the test may begin just after
    # a high phase has started, and on a busy machine the metrics lag: wait for two of them
    # one condition on the latest scale-out: the autoscaler may have scaled back in since an earlier one
    wait_for("a realized scale-out in status.history and its executor pods Running", lambda: (
        ups := history(k, "scaleUp")) and len(running(k, "executor")) >= ups[-1]["to"], timeout=840, every=3, k=k)
    assert driver_identity(k) == (uid, restarts), "the driver was restarted to rescale"


@pytest.mark.timeout(900)  # its waits outlast the suite's 600 s: let them fail with their diagnosis
def test_load_drop_scales_back_in(k, example):
    uid, restarts = driver_identity(k)
    # a scale-in lands in one of the step load's 150-s low phases, every 300 s: the example's 45-s scale-down delay
    # after the 1-minute metrics window fits in the first; on a busy machine the metrics' lag can make it miss one
    # (with a 90-s delay it missed the first: 358-375 s measured), so wait for three
    # one condition on the latest scale-in: the autoscaler may have scaled out again since an earlier one
    wait_for("a realized scale-in in status.history and fewer executor pods", lambda: (
        downs := history(k, "scaleDown")) and len(pods(k, "executor")) <= downs[-1]["to"], timeout=840, every=3, k=k)
    assert driver_identity(k) == (uid, restarts)


def test_kubectl_scale_is_honored_in_place(k, example):
    # advisor mode while it runs: the autoscaler must not undo the manual count under the step load during the waits
    k.kubectl("patch", "elasticitypolicy", POLICY, "-n", NS, "--type=merge", "-p", '{"spec": {"mode": "advisor"}}')
    try:
        uid, restarts = driver_identity(k)
        want = 2 if status(k).get("currentExecutors", 1) == 1 else 1
        k.kubectl("scale", f"streamapp/{APP}", f"--replicas={want}", "-n", NS)
        wait_for(f"status.currentExecutors == {want}", lambda: status(k).get("currentExecutors") == want,
                 timeout=180, every=2, k=k)
        wait_for(f"{want} executor pods", lambda: len(running(k, "executor")) == want
                 and len(pods(k, "executor")) == want, timeout=180, every=2, k=k)
        assert driver_identity(k) == (uid, restarts)
    finally:
        k.kubectl("patch", "elasticitypolicy", POLICY, "-n", NS, "--type=merge", "-p", '{"spec": {"mode": "auto"}}')


def prometheus_url(k) -> str:
    (pod,) = get(k, "pods", "-n", "monitoring", "-l", "app.kubernetes.io/name=prometheus")["items"]
    return f"http://{pod['status']['podIP']}:9090"  # pod IPs are routable from the host: the bridges live here


def test_every_dashboard_panel_returns_data(k, example):
    from tests.dashboard import panel_queries
    base = prometheus_url(k)

    def result(expr: str) -> list:
        url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        return json.load(urllib.request.urlopen(url, timeout=10))["data"]["result"]

    for title, expr in panel_queries(CHART / "dashboards" / "elastream.json", app=APP, namespace=NS):
        wait_for(f"data for panel {title!r}: {expr}", lambda e=expr: result(e), timeout=120, every=5, k=k)


def executor_nodes(k) -> dict[str, str]:
    """executor id -> node of the running executor pods (kubectl get pods -o wide)."""
    return {p["metadata"]["labels"]["spark-exec-id"]: p["spec"]["nodeName"] for p in running(k, "executor")}


def scale_to(k, n: int) -> None:
    # bounds n..n: the autoscaler has nothing to change, so the count stays n through the waits that follow
    k.kubectl("patch", "elasticitypolicy", POLICY, "-n", NS, "--type=merge", "-p",
              json.dumps({"spec": {"bounds": {"min": n, "max": n}}}))
    k.kubectl("scale", f"streamapp/{APP}", f"--replicas={n}", "-n", NS)
    wait_for(f"{n} executor pod(s) Running and no other", lambda: len(running(k, "executor")) == n
             and len(pods(k, "executor")) == n, timeout=240, every=2, k=k)


def test_placement_sends_executors_to_their_planned_nodes(k, example):
    """spec.placement: the operator plans from the executors' measured loads and their requests, the pods end where
    status.placement says, and a new executor pod Spark creates is sent to its planned node by the webhook. The new
    pod is a replacement: its slot in the plan is known whatever the load (a scale-out's pod goes to a node only
    where the plan has room for its load, which depends on the phase of the load step)."""
    scale_to(k, 1)
    k.kubectl("patch", "elasticitypolicy", POLICY, "-n", NS, "--type=merge", "-p", '{"spec": {"placement": "elastream"}}')
    first = wait_for("a plan in status.placement", lambda: (st := status(k).get("placement") or {}).get("executors")
                     and st, timeout=180, every=2, k=k)
    assert first["algorithm"] == "elastream", first
    scale_to(k, 2)
    for pod in running(k, "executor"):  # a scale-out's pod the webhook placed runs where it was sent
        planned = (pod["metadata"].get("annotations") or {}).get(PLANNED_NODE)
        assert planned in (None, pod["spec"]["nodeName"]), f"sent to {planned}, runs on {pod['spec']['nodeName']}"

    def settled():
        st = status(k).get("placement") or {}
        return st if len(st.get("executors") or {}) == 2 and st["executors"] == executor_nodes(k) else None

    st = wait_for("the executor pods on the nodes status.placement plans", settled, timeout=300, every=3, k=k)
    assert set(st["predictedPeak"]) == set(st["executors"].values()), st
    view = json.loads(get(k, "configmap", "elastream-placement", "-n", RELEASE_NS)["data"]["plan.json"])
    assert {f"{NS}/{APP}/{e}": n for e, n in st["executors"].items()}.items() <= view["nodeOf"].items(), view
    assert view["nodesUsed"] == len(set(view["nodeOf"].values()))

    lost_id, lost_node = sorted(st["executors"].items())[0]
    (lost,) = [p for p in running(k, "executor") if p["metadata"]["labels"]["spark-exec-id"] == lost_id]
    k.kubectl("delete", "pod", lost["metadata"]["name"], "-n", NS, "--wait=false")
    new = wait_for("Spark's replacement executor pod Running", lambda: next(
        (p for p in running(k, "executor") if p["metadata"]["labels"]["spark-exec-id"] not in st["executors"]), None),
        timeout=240, every=2, k=k)
    planned = (new["metadata"].get("annotations") or {}).get(PLANNED_NODE)
    assert planned == lost_node == new["spec"]["nodeName"], \
        f"the webhook sent the replacement to {planned} (the lost executor's slot: {lost_node}), it runs on " \
        f"{new['spec']['nodeName']}\n{diagnosis(k)}"
    k.kubectl("patch", "elasticitypolicy", POLICY, "-n", NS, "--type=merge", "-p",
              '{"spec": {"placement": "none", "bounds": null}}')  # bounds null: the autoscaler free again (scale_to)
    wait_for("status.placement gone with spec.placement none", lambda: "placement" not in status(k),
             timeout=120, every=2, k=k)


def test_deleted_driver_is_recreated_and_resumes(k, example):
    uid, _ = driver_identity(k)
    k.kubectl("delete", "pod", f"{APP}-driver", "-n", NS, "--wait=false")
    wait_for("a new driver pod Running", lambda: (r := running(k, "driver")) and r[0]["metadata"]["uid"] != uid,
             timeout=240, every=2, k=k)
    wait_for("StreamApp Ready again", lambda: condition(k, "Ready").get("status") == "True", timeout=240, every=2, k=k)


def test_suspend_stops_pods_and_resume_restarts_from_the_checkpoint(k, example):
    k.kubectl("patch", "streamapp", APP, "-n", NS, "--type=merge", "-p", '{"spec": {"suspend": true}}')
    # terminating pods too (a stopping driver may still commit a batch), and the phase in the same wait
    wait_for("no pod of the app left, phase Suspended", lambda: not get(
        k, "pods", "-n", NS, "-l", f"elastream.io/app={APP}")["items"] and status(k).get("phase") == "Suspended",
        timeout=180, every=2, k=k)
    report = verify.check(*job_dirs(k), produced=committed_records(k))
    assert report.produced > 10_000 and report.exactly_once, report
    k.kubectl("patch", "streamapp", APP, "-n", NS, "--type=merge", "-p", '{"spec": {"suspend": false}}')
    wait_for("the driver Running again", lambda: running(k, "driver"), timeout=240, every=2, k=k)


def job_dirs(k) -> tuple[str, str]:
    """The checkpoint and sink on the example's hostPath volume, as the host sees them."""
    pv = get(k, "pv", "elastream-example-data")
    root = pv["spec"]["hostPath"]["path"]
    return f"{root}/{APP}/checkpoint", f"{root}/{APP}/sink"


def committed_records(k) -> int:
    # accounted, not committed: a stop may cut the commit of a batch the sink already holds whole
    return verify.accounted_offset(*job_dirs(k))


def test_delete_removes_every_pod_within_60s(k, example):
    k.kubectl("delete", "-f", str(EXAMPLES), "--wait=false")
    start = time.monotonic()
    wait_for("every pod of the app gone", lambda: not get(k, "pods", "-n", NS, "-l", f"elastream.io/app={APP}")["items"],
             timeout=60, every=1, k=k)
    assert time.monotonic() - start < 60


def test_helm_uninstall_leaves_nothing_stuck(k, release):
    helm(k, "uninstall", "elastream", "-n", release, "--wait", "--timeout", "2m")
    wait_for("the operator pod gone", lambda: not get(k, "pods", "-n", release)["items"], timeout=90, every=2, k=k)
    stuck = [a["metadata"]["name"] for a in get(k, "streamapps", "-A")["items"] if a["metadata"].get("deletionTimestamp")]
    assert not stuck, f"StreamApps stuck on a finalizer: {stuck}"
