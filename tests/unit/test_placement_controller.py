"""Pure parts of the operator's placement: node usability, CPU quantities, the time grid, the webhook's patch."""
from __future__ import annotations

import numpy as np

from controllers.placement import PlacedApp, _on_grid, choose_algorithm, summary, with_app_mean
from elastream.engines.nodes import cpu_cores, usable_node
from controllers.webhook import _namespace_of, with_node
from elasticity.placement.planner import NodeCapacity, PlacedExecutor, PlacementPlanner


def _app(algorithm):
    return PlacedApp("ns", algorithm, algorithm, "http://p", {}, 0.0)


def test_one_algorithm_for_the_joint_plan():
    assert choose_algorithm([_app("ga"), _app("ga")]) == ("ga", "")
    algorithm, note = choose_algorithm([_app("ga"), _app("greedy")])
    assert algorithm == "elastream" and "ga, greedy" in note and "spec.placement" in note


def test_cpu_quantities():
    assert cpu_cores("2") == 2.0 and cpu_cores("500m") == 0.5 and cpu_cores("0.25") == 0.25


def test_usable_nodes_are_ready_schedulable_untainted():
    ready = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert usable_node({**ready, "spec": {}})
    assert not usable_node({**ready, "spec": {"unschedulable": True}})
    assert not usable_node({**ready, "spec": {"taints": [{"key": "kwok.x-k8s.io/node", "effect": "NoSchedule"}]}})
    assert usable_node({**ready, "spec": {"taints": [{"key": "x", "effect": "PreferNoSchedule"}]}})
    assert not usable_node({"status": {"conditions": [{"type": "Ready", "status": "False"}]}, "spec": {}})


def test_samples_land_on_the_grid_and_gaps_stay_unknown():
    steps = np.array([0.0, 15.0, 30.0, 45.0])
    out = _on_grid([0.0, 15.0, 44.0], [1.0, 2.0, 4.0], steps)
    assert out[:2].tolist() == [1.0, 2.0] and np.isnan(out[2]) and out[3] == 4.0
    assert np.isnan(_on_grid([], [], steps)).all()


def test_webhook_pins_the_node_and_keeps_other_affinity():
    other = {"podAntiAffinity": {"x": 1}}
    out = with_node(other, "n1")
    term = out["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert term["matchFields"] == [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]
    assert out["podAntiAffinity"] == {"x": 1} and "nodeAffinity" not in other
    # a required term of the pod's own is kept, narrowed to the node (terms are ORed: each one gets the node)
    own = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]},
        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["b"]}]}]}}}
    terms = with_node(own, "n2")["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert [t["matchExpressions"][0]["values"] for t in terms] == [["a"], ["b"]]
    assert all(t["matchFields"] == [{"key": "metadata.name", "operator": "In", "values": ["n2"]}] for t in terms)
    assert _namespace_of({"username": "system:serviceaccount:team-a:wordcount-spark"}) == "team-a"
    assert _namespace_of({"username": "admin"}) is None


def test_summary_lists_each_used_node():
    plan = PlacementPlanner().plan([PlacedExecutor("ns/a/1", "ns/a", "n0", np.full(8, 0.5))],
                                   [NodeCapacity("n0", 2.0), NodeCapacity("n1", 2.0)])
    text = summary(plan)
    assert "n0: peak 0.50 of 2.00 cores: ns/a/1" in text and "n1:" not in text


def test_an_executor_without_samples_carries_its_apps_mean():
    nan = np.full(3, np.nan)
    out = with_app_mean([PlacedExecutor("ns/a/1", "ns/a", "n0", np.array([1.0, np.nan, 3.0])),
                         PlacedExecutor("ns/a/2", "ns/a", "n0", np.array([3.0, 2.0, 1.0])),
                         PlacedExecutor("ns/a/3", "ns/a", None, nan.copy())])
    assert out[2].load.tolist() == [2.0, 2.0, 2.0]
    alone = with_app_mean([PlacedExecutor("ns/b/1", "ns/b", None, nan.copy())])
    assert np.isnan(alone[0].load).all()  # nothing known: the planner counts it as no load (its request still counts)


def test_advisor_mode_plans_but_pins_no_pod():
    from controllers.placement import ClusterPlacement

    placement = ClusterPlacement()
    placement.register("ns", "auto", "elastream", "http://p", {})
    placement.register("ns", "advised", "elastream", "http://p", {}, advisor=True)
    assert placement.pins("ns/auto") and not placement.pins("ns/advised") and not placement.pins("ns/unknown")
    placement.forget("ns", "auto")
    assert not placement.pins("ns/auto")


def test_the_webhook_handler_exists_only_with_its_server(monkeypatch):
    """kopf refuses to run admission handlers without a server: in-process operators (tests, development) get none."""
    import importlib

    import kopf

    import controllers.webhook as webhook

    monkeypatch.delenv("ELASTREAM_WEBHOOK_CERT_DIR", raising=False)
    assert webhook.webhook_server() is None
    assert not [h for h in kopf.get_default_registry()._webhooks.get_all_handlers() if h.id == "place-executor"]
    monkeypatch.setenv("ELASTREAM_WEBHOOK_CERT_DIR", "/nonexistent")
    assert webhook.webhook_server() is not None
    importlib.reload(webhook)  # registers it (then leave the registry as we found it)
    registry = kopf.get_default_registry()._webhooks
    assert [h for h in registry.get_all_handlers() if h.id == "place-executor"]
    registry._handlers = [h for h in registry._handlers if h.id != "place-executor"]


def test_refresh_plans_from_pods_nodes_and_prometheus(monkeypatch):
    """One refresh with fake API and Prometheus answers: executors keyed by the engine's id, their own requests
    counted by the plan (not as the node's other pods), other pods' requests taken off the node's capacity."""
    from types import SimpleNamespace

    import kubernetes

    import controllers.placement as placement
    from elastream.engines.spark.placement import SparkPlacement

    def pod(name, node, labels, cpu):
        return {"metadata": {"name": name, "namespace": "ns", "labels": labels},
                "spec": {"nodeName": node, "containers": [{"resources": {"requests": {"cpu": cpu}}}]},
                "status": {"phase": "Running"}}

    execs = [pod(f"wc-exec-{i}", f"n{i}", {"elastream.io/app": "wc", "elastream.io/role": "executor",
                                            "spark-exec-id": str(i)}, "500m") for i in (1, 2)]
    driver = pod("wc-driver", "n1", {"elastream.io/app": "wc", "elastream.io/role": "driver"}, "1")
    ready = {"conditions": [{"type": "Ready", "status": "True"}], "allocatable": {"cpu": "2"}}
    nodes = [{"metadata": {"name": n, "labels": {}}, "spec": {}, "status": ready} for n in ("n1", "n2")]

    class Core:
        def list_namespaced_pod(self, namespace, label_selector):
            assert label_selector == "elastream.io/app=wc,elastream.io/role=executor"
            return SimpleNamespace(items=execs)

        def list_node(self):
            return SimpleNamespace(items=nodes)

        def list_pod_for_all_namespaces(self, field_selector):
            node = field_selector.split("=")[1]
            return SimpleNamespace(items=[p for p in execs + [driver] if p["spec"]["nodeName"] == node])

    class Prometheus:
        def __init__(self, url):
            pass

        def range(self, promql, start, end, step):
            times = list(np.arange(start, end + 1e-9, step))
            return [({"executor": e}, times, [0.2] * len(times)) for e in ("1", "2")]

    monkeypatch.setattr(placement.kube, "core", lambda: Core())
    monkeypatch.setattr(placement.kube, "api_client", lambda: kubernetes.client.ApiClient())
    monkeypatch.setattr(placement, "PrometheusClient", Prometheus)
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    planner = placement.ClusterPlacement()
    planner.register("ns", "wc", "elastream", "http://p", {}, SparkPlacement())
    planner.refresh()
    plan = planner.plan
    assert planner.problem is None and plan is not None
    assert plan.capacity == {"n1": 1.0, "n2": 2.0}  # the driver's 1 CPU is taken off n1; the executors' are not
    # 2 x (0.2 load, 0.5 request) fit on n2 alone: the plan frees n1 by moving executor 1
    assert plan.node_of == {"ns/wc/1": "n2", "ns/wc/2": "n2"} and plan.moves == ["ns/wc/1"]
    part = planner.for_app("ns", "wc")
    assert part["executors"] == {"1": "n2", "2": "n2"} and part["moves"] == ["1"] and part["nodesUsed"] == 1


def test_cpu_left_is_allocatable_less_the_other_live_pods_requests():
    from elastream.engines.nodes import cpu_left

    def pod(name, cpu, phase="Running"):
        return {"metadata": {"namespace": "ns", "name": name}, "status": {"phase": phase},
                "spec": {"containers": [{"resources": {"requests": {"cpu": cpu}}}]}}

    node = {"status": {"allocatable": {"cpu": "2"}}}
    pods = [pod("driver", "250m"), pod("exec", "500m"), pod("done", "1", "Succeeded"), pod("new", "100m", "Pending")]
    assert cpu_left(node, pods, excluded={"ns/exec"}) == 2 - 0.25 - 0.1
    assert cpu_left(node, [pod("big", "3")], excluded=set()) == 0.0


def test_placement_refuses_executors_with_scheduling_fields_it_cannot_plan():
    from elastream.api.streamapp import StreamAppSpec
    from elastream.engines.spark.placement import SparkPlacement

    def spec(**executor):
        return StreamAppSpec.model_validate({"engine": "spark", "spark": {"executor": executor}})

    assert SparkPlacement.unsupported(spec()) is None
    assert "spec.spark.executor.affinity" in SparkPlacement.unsupported(spec(tolerations=[{"operator": "Exists"}]))
    assert "spec.spark.executor.affinity" in SparkPlacement.unsupported(spec(affinity={"nodeAffinity": {}}))
