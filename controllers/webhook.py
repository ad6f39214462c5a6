"""The admission webhook that sends a new executor pod to its planned node (controllers.placement).

Spark's Kubernetes backend creates executor pods itself; the chart's MutatingWebhookConfiguration sends the CREATE
of every pod labelled elastream.io/role=executor here (failurePolicy Ignore: when the operator is away, pods are
created unplaced and the scheduler alone decides). The pod gets a required node affinity on the planned node and
the annotation elastream.io/planned-node; pods of apps without a plan pass unchanged.
Served by kopf's webhook server when $ELASTREAM_WEBHOOK_CERT_DIR holds tls.crt and tls.key (the chart's Secret).
"""
from __future__ import annotations

import logging
import os
from typing import Any

import kopf

from controllers import kube
from controllers.placement import cluster_placement
from elastream.engines.owners import LABEL_APP, LABEL_ROLE
from elasticity.placement.planner import PlacementPlanner

log = logging.getLogger(__name__)
PLANNED_NODE = "elastream.io/planned-node"
WEBHOOK_PORT = int(os.environ.get("ELASTREAM_WEBHOOK_PORT", "9443"))


def webhook_server() -> kopf.WebhookServer | None:
    """kopf's HTTPS server with the chart's certificate, or None when no certificate directory is set."""
    where = os.environ.get("ELASTREAM_WEBHOOK_CERT_DIR")
    if not where:
        return None
    return kopf.WebhookServer(addr="0.0.0.0", port=WEBHOOK_PORT, certfile=os.path.join(where, "tls.crt"),
                              pkeyfile=os.path.join(where, "tls.key"))


def place_executor(body: kopf.Body, patch: kopf.Patch, userinfo: dict[str, Any], **_) -> None:
    meta = body.get("metadata") or {}
    app = (meta.get("labels") or {}).get(LABEL_APP)
    namespace = meta.get("namespace") or _namespace_of(userinfo)
    placement = cluster_placement()
    plan, group = placement.plan, f"{namespace}/{app}"
    if not app or not namespace or plan is None or not placement.pins(group):
        return
    try:
        live = live_executors_per_node(namespace, placement.app(namespace, app).engine.executor_selector(app))
    except Exception as err:  # noqa: BLE001 - never block a pod: unplaced is better than not created
        log.warning("placing an executor of %s: could not list its pods: %s", group, err)
        return
    node = PlacementPlanner.choose_node(plan, group, live)
    if node is None:
        return
    patch.metadata.annotations[PLANNED_NODE] = node
    patch.spec["affinity"] = with_node(body.get("spec", {}).get("affinity"), node)
    log.info("executor pod of %s goes to node %s", group, node)


def _namespace_of(userinfo: dict[str, Any]) -> str | None:
    """The namespace of the creating service account (Spark's driver creates its executors)."""
    parts = (userinfo or {}).get("username", "").split(":")
    return parts[2] if len(parts) == 4 and parts[:2] == ["system", "serviceaccount"] else None


def with_node(affinity: dict[str, Any] | None, node: str) -> dict[str, Any]:
    """The pod's affinity with the node's name required too: added to each of the pod's own required terms (they
    are ORed; within a term, requirements are ANDed), so a term of the user's is kept, narrowed to the node."""
    on_node = {"key": "metadata.name", "operator": "In", "values": [node]}
    out = dict(affinity or {})
    node_affinity = dict(out.get("nodeAffinity") or {})
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or [{}]
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {**required, "nodeSelectorTerms": [
        {**term, "matchFields": [*(term.get("matchFields") or []), on_node]} for term in terms]}
    out["nodeAffinity"] = node_affinity
    return out


def live_executors_per_node(namespace: str, selector: str) -> dict[str, int]:
    """Executors of an app (its engine's selector) per node: running there, or admitted for it and not scheduled
    yet."""
    pods = kube.core().list_namespaced_pod(namespace, label_selector=selector)
    out: dict[str, int] = {}
    for pod in pods.items:
        if pod.metadata.deletion_timestamp or (pod.status and pod.status.phase in ("Succeeded", "Failed")):
            continue
        node = pod.spec.node_name or (pod.metadata.annotations or {}).get(PLANNED_NODE)
        if node:
            out[node] = out.get(node, 0) + 1
    return out


# kopf refuses to start with an admission handler and no server, so the handler exists only where the server does
if os.environ.get("ELASTREAM_WEBHOOK_CERT_DIR"):
    kopf.on.mutate("v1", "pods", id="place-executor", operations={"CREATE"},
                   labels={LABEL_ROLE: "executor"})(place_executor)
