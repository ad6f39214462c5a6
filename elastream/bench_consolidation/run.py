"""`elastream bench consolidation`: on a cluster's real nodes, N managed Spark StreamApps whose loads peak at different
times, their executors placed by Kubernetes' default scheduler, then (same apps, same loads) by the operator's plan.

Needs: the operator installed by Helm with its placement webhook, Prometheus in the cluster (the example's,
examples/kubernetes/prometheus.yaml, whose pod IP the bench reads), a ReadWriteMany claim for the apps' checkpoints
(the example's `wordcount-data`), and the runner image on the nodes.

1. One ElasticityPolicy (spec.placement none) and N StreamApps of one executor each, with the same step load started
   2·period/N apart, so their peaks come at different times.
2. Default: once every executor runs and the loads have gone through two periods, measure `window` seconds.
3. Plan: set spec.placement to elastream, wait until every app's status.placement says where its executors are and
   they are there, then measure `window` seconds.
Per phase: the nodes the executors use, and the share of node-time their measured CPU (the rate of
elastream_executor_task_seconds_total) spent over the node's capacity (allocatable less the other pods' requests).
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from elasticity import json_report
from elastream.api import GROUP, VERSION
from elastream.bench_consolidation.measure import Layout, layout
from elastream.engines.nodes import cpu_left, pod_ref, usable_node
from elastream.errors import UserError

POLICY = "consolidation"
IMAGE = "ghcr.io/elastream/spark-runner:0.1.0"
LOAD_QUERY = 'sum by (app, executor) (rate(elastream_executor_task_seconds_total{{app=~"{apps}"}}[30s]))'
STEP_S = 5.0


def api():
    import kubernetes

    try:
        client = kubernetes.config.new_client_from_config(config_file=os.environ.get("KUBECONFIG"))
    except (kubernetes.config.ConfigException, FileNotFoundError) as err:
        raise UserError(f"bench consolidation needs a cluster (KUBECONFIG): {err}") from None
    return kubernetes.client.CoreV1Api(client), kubernetes.client.CustomObjectsApi(client), client


def manifests(namespace: str, apps: list[str], args: argparse.Namespace, prometheus_in_cluster: str) -> list[dict]:
    policy = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ElasticityPolicy",
              "metadata": {"name": POLICY, "namespace": namespace},
              "spec": {"mode": "auto", "algorithm": "ds2", "placement": "none", "latencyTarget": "30s",
                       "evaluationInterval": "10s", "metricsWindow": "1m", "stabilizationWindow": "20s",
                       "maxRescalesPerHour": 60, "metrics": {"prometheus": {"url": prometheus_in_cluster},
                                                             "staleAfter": "1m"}}}
    out = [policy]
    for name in apps:
        out.append({"apiVersion": f"{GROUP}/{VERSION}", "kind": "StreamApp",
                    "metadata": {"name": name, "namespace": namespace},
                    "spec": {"engine": "spark", "policyRef": {"name": POLICY}, "spark": {
                        "image": args.image, "application": {"builtin": "wordcount"},
                        "driver": {"cores": 1, "memory": "768m"}, "executor": {"cores": 1, "memory": "768m"},
                        "executors": {"initial": 1, "min": 1, "max": 1}, "maxParallelism": 2, "triggerInterval": "3s",
                        "conf": {"spark.kubernetes.executor.request.cores": args.executor_request,
                                 "spark.kubernetes.driver.request.cores": args.driver_request},
                        "storage": {"claimName": args.claim, "fixPermissions": True},
                        "source": {"type": "generator", "generator": {
                            "profile": "step", "rate": args.rate, "peakRate": args.peak_rate,
                            "period": f"{args.period:g}s"}}}}})
    return out


def wait(what: str, check: Callable[[], Any], timeout_s: float, every_s: float = 3.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(every_s)
    raise TimeoutError(f"bench consolidation: no {what} after {timeout_s:.0f}s")


class Bench:
    def __init__(self, namespace: str, apps: list[str]):
        self.core, self.custom, self.client = api()
        self.namespace, self.apps = namespace, apps

    # --- reading the cluster ---
    def prometheus_url(self) -> str:
        pods = self.core.list_namespaced_pod("monitoring", label_selector="app.kubernetes.io/name=prometheus").items
        running = [p for p in pods if p.status.phase == "Running" and p.status.pod_ip]
        if not running:
            raise UserError("no Prometheus pod Running in namespace monitoring: kubectl apply -f "
                            "examples/kubernetes/prometheus.yaml (or pass --prometheus URL)")
        return f"http://{running[0].status.pod_ip}:9090"  # pod IPs are routable from the test cluster's host

    def _executor_pods(self) -> list[dict]:
        """The apps' executor pods that are not being deleted."""
        pods = self.core.list_namespaced_pod(self.namespace, label_selector="elastream.io/role=executor").items
        return [p for p in self.client.sanitize_for_serialization(pods) if not p["metadata"].get("deletionTimestamp")
                and (p["metadata"].get("labels") or {}).get("elastream.io/app") in self.apps]

    def executors(self) -> dict[str, str]:
        """'app/executor id' -> node, for the Running executor pods of the apps."""
        out = {}
        for pod in self._executor_pods():
            labels = pod["metadata"].get("labels") or {}
            if labels.get("spark-exec-id") and (pod.get("status") or {}).get("phase") == "Running":
                out[f"{labels['elastream.io/app']}/{labels['spark-exec-id']}"] = pod["spec"]["nodeName"]
        return out

    def capacity(self) -> dict[str, float]:
        """node -> allocatable CPU less the requests of every pod on it but the apps' executors (as the operator's
        plan counts)."""
        executors = {pod_ref(p) for p in self._executor_pods()}
        out = {}
        for node in self.core.list_node().items:
            body = self.client.sanitize_for_serialization(node)
            if usable_node(body):
                name = body["metadata"]["name"]
                pods = self.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={name}").items
                out[name] = cpu_left(body, self.client.sanitize_for_serialization(pods), executors)
        return out

    def status(self, app: str) -> dict:
        body = self.custom.get_namespaced_custom_object(GROUP, VERSION, self.namespace, "streamapps", app)
        return body.get("status") or {}

    # --- acting ---
    def apply(self, doc: dict) -> None:
        import kubernetes

        plural = {"ElasticityPolicy": "elasticitypolicies", "StreamApp": "streamapps"}[doc["kind"]]
        try:
            self.custom.create_namespaced_custom_object(GROUP, VERSION, self.namespace, plural, doc)
        except kubernetes.client.ApiException as err:
            if err.status != 409:
                raise
            raise UserError(f"{doc['kind']} {self.namespace}/{doc['metadata']['name']} exists already: delete it "
                            f"(or use --namespace) before the bench") from None

    def set_placement(self, value: str) -> None:
        self.custom.patch_namespaced_custom_object(GROUP, VERSION, self.namespace, "elasticitypolicies", POLICY,
                                                   {"spec": {"placement": value}})

    def delete(self) -> None:
        import kubernetes

        for plural, name in [*(("streamapps", a) for a in self.apps), ("elasticitypolicies", POLICY)]:
            try:
                self.custom.delete_namespaced_custom_object(GROUP, VERSION, self.namespace, plural, name)
            except kubernetes.client.ApiException as err:
                if err.status != 404:
                    raise


def measure(bench: Bench, prometheus, window_s: float, label: str) -> tuple[Layout, dict[str, str]]:
    """The executors' layout and CPU over the next `window_s` seconds."""
    node_of = bench.executors()
    time.sleep(window_s)
    end = time.time()
    if bench.executors() != node_of:
        raise RuntimeError(f"{label}: executors moved or restarted while measured: {node_of} -> {bench.executors()}")
    grid = np.arange(end - window_s, end + 1e-6, STEP_S)
    query = LOAD_QUERY.format(apps="|".join(a.replace(".", "\\\\.") for a in bench.apps))  # names: DNS labels
    loads = {}
    for labels, times, values in prometheus.range(query, grid[0], grid[-1], STEP_S):
        by_time = dict(zip(np.round(times, 3), values))
        loads[f"{labels.get('app')}/{labels.get('executor')}"] = np.array(
            [by_time.get(round(t, 3), 0.0) for t in grid])
    missing = set(node_of) - set(loads)
    if missing:
        raise RuntimeError(f"{label}: Prometheus has no CPU series for {sorted(missing)}")
    result = layout(node_of, loads, bench.capacity())
    print(f"  {label:<8} nodes used {result.nodes_used}, node-time over capacity {result.overload_pct:.1f} %, "
          f"peak cores {result.peak_cores} of {result.capacity}", flush=True)
    return result, node_of


def placed_as_planned(bench: Bench) -> dict | None:
    live = bench.executors()
    plans = {}
    for app in bench.apps:
        placement = bench.status(app).get("placement") or {}
        planned = placement.get("executors") or {}
        if not planned or any(live.get(f"{app}/{e}") != node for e, node in planned.items()):
            return None
        if len([k for k in live if k.startswith(f"{app}/")]) != len(planned):
            return None
        plans[app] = placement
    return plans


def run(args: argparse.Namespace) -> dict:
    from elastream.engines.prometheus import PrometheusClient

    apps = [f"{args.prefix}-{i + 1}" for i in range(args.apps)]
    bench = Bench(args.namespace, apps)
    prometheus = PrometheusClient(args.prometheus or bench.prometheus_url())
    docs = manifests(args.namespace, apps, args, args.prometheus_in_cluster)
    bench.apply(docs[0])
    try:
        stagger = 2 * args.period / len(apps)
        for i, doc in enumerate(docs[1:]):
            if i:
                time.sleep(stagger)
            bench.apply(doc)
            print(f"  started {doc['metadata']['name']}", flush=True)
        wait("Running executor for every app", lambda: {k.split("/")[0] for k in bench.executors()} == set(apps),
             timeout_s=600)
        time.sleep(2 * args.period)  # two load cycles in the series before measuring
        default, default_nodes = measure(bench, prometheus, args.window, "default")
        bench.set_placement("elastream")
        plans = wait("executors on the nodes of the operator's plan", lambda: placed_as_planned(bench),
                     timeout_s=args.plan_timeout, every_s=5.0)
        planned, plan_nodes = measure(bench, prometheus, args.window, "plan")
    finally:
        if not args.keep:
            bench.delete()
    return {"plan_nodes": planned.nodes_used, "default_nodes": default.nodes_used,
            "overload_pct": planned.overload_pct, "default_overload_pct": default.overload_pct,
            "plan": {**planned.__dict__, "executors": plan_nodes,
                     "status": {a: p for a, p in plans.items()}},
            "default": {**default.__dict__, "executors": default_nodes},
            "settings": {"apps": args.apps, "rate": args.rate, "peak_rate": args.peak_rate, "period_s": args.period,
                         "window_s": args.window, "executor_request": args.executor_request,
                         "driver_request": args.driver_request}}


def table(result: dict) -> str:
    lines = ["| placement | nodes used | node-time over capacity | peak cores per node (of capacity) |",
             "|---|---:|---:|---|"]
    for label, key in (("Kubernetes default scheduler", "default"), ("elastream plan (operator)", "plan")):
        row = result[key]
        peaks = ", ".join(f"{n}: {row['peak_cores'][n]:.2f} of {row['capacity'][n]:.2f}" for n in sorted(row["peak_cores"]))
        lines.append(f"| {label} | {row['nodes_used']} | {row['overload_pct']:.1f} % | {peaks} |")
    return "\n".join(lines)


def bench_main(args: argparse.Namespace) -> int:
    if args.apps < 3:
        raise UserError(f"--apps must be at least 3 (loads that peak at different times), not {args.apps}")
    if args.period < 20 or args.window < 30:
        raise UserError(f"--period must be at least 20 s and --window at least 30 s, not {args.period:g} and "
                        f"{args.window:g}")
    if not 0 < args.rate <= args.peak_rate:
        raise UserError(f"--rate must be above 0 and at most --peak-rate, not {args.rate:g} and {args.peak_rate:g}")
    from elastream.engines.base import MetricsUnavailable

    try:
        result = run(args)
    except (MetricsUnavailable, TimeoutError, RuntimeError) as err:
        raise UserError(f"bench consolidation failed: {err}") from None
    text = table(result)
    print(text)
    headline = json.dumps(json_report.finite({k: result[k] for k in ("plan_nodes", "default_nodes", "overload_pct")}),
                          allow_nan=False)
    print(headline)
    if args.json:
        Path(args.json).write_text(json_report.dumps(result))
    command = (f"elastream bench consolidation --apps {args.apps} --rate {args.rate:g} --peak-rate "
               f"{args.peak_rate:g} --period {args.period:g} --window {args.window:g}")
    args.docs_markdown = (
        "## Consolidation — the operator's placement plan against Kubernetes' default scheduler, on real nodes\n\n"
        f"Command: `{command}` on the test cluster's real nodes (`scripts/test-cluster up --real-nodes 2`, the "
        f"operator installed by Helm with its placement webhook). {args.apps} managed Spark word counts of one "
        f"executor each (CPU requests: executor {args.executor_request}, driver {args.driver_request}), each under a step load of {args.rate:g}/{args.peak_rate:g} "
        f"records/s with a {args.period:g}-s period, started {2 * args.period / args.apps:g} s apart so that their "
        f"peaks differ. Each layout is measured for {args.window:g} s: the nodes the executors use, and the share "
        f"of node-time their measured CPU spent over the node's capacity (allocatable less the other pods' "
        f"requests).\n\n{text}\n\nJSON: `{headline}`\n")
    return 0
