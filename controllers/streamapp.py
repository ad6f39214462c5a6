"""kopf handlers of StreamApp: reconcile the owned objects and run the autoscaling loop. Thin: parse, call, write."""
from __future__ import annotations

import logging
import secrets
from typing import Any

import kopf
from kubernetes.client.rest import ApiException
from pydantic import ValidationError

from controllers import kube, managed
from controllers.autoscaling import RETRY_INVALID_S, evaluate
from controllers.conditions import set_condition
from controllers.metrics import ERRORS
from controllers.status import invalid_status
from elastream.adapters.control import ControlError
from elastream.api import GROUP, VERSION
from elastream.api.manifests import describe_errors
from elastream.api.streamapp import StreamAppSpec

RESOURCE = (GROUP, VERSION, "streamapps")
log = logging.getLogger(__name__)


@kopf.on.resume(*RESOURCE)
@kopf.on.create(*RESOURCE)
@kopf.on.update(*RESOURCE, field="spec")
def reconcile(body: kopf.Body, name: str, namespace: str, meta: kopf.Meta, status: kopf.Status,
              patch: kopf.Patch, logger, **_) -> None:
    generation = meta.get("generation", 0)
    try:
        spec = StreamAppSpec.model_validate(dict(body["spec"]))
    except ValidationError as err:
        patch.status.update(invalid_status(dict(status), "; ".join(describe_errors(err)), generation))
        return
    conds = list(status.get("conditions") or [])
    patch.status["selector"] = managed.selector(name)
    patch.status["observedGeneration"] = generation
    if spec.suspend:
        patch.status["phase"] = "Suspended"
        patch.status["conditions"] = set_condition(conds, "Progressing", False, "Suspended", "spec.suspend is true", generation)
        return
    if spec.engine == "storm":
        message = "the storm backend is not implemented yet: the topology is neither observed nor rescaled"
        patch.status["phase"] = "Pending"
        patch.status["conditions"] = set_condition(conds, "Ready", False, "EngineNotSupported", message, generation)
        return
    if spec.spark.attach is None:
        created = _ensure_children(dict(body), spec)
        message = f"created {', '.join(created)}" if created else "owned objects are in place"
    else:
        message = f"attached to the job at {spec.spark.attach.control_url}"
    kopf.info(dict(body), reason="Reconciled", message=message)
    if not status.get("phase") or status.get("phase") in ("Suspended", "Failed"):
        patch.status["phase"] = "Pending"
    patch.status["conditions"] = set_condition(conds, "Progressing", True, "Reconciled",
                                               "owned objects are in place; the autoscaler evaluates the policy",
                                               generation)


def _ensure_children(body: dict[str, Any], spec: StreamAppSpec) -> list[str]:
    """Create what is missing (idempotent); the ConfigMap follows the spec."""
    namespace = body["metadata"]["namespace"]
    created = []
    for manifest in managed.children(body, spec, token=secrets.token_urlsafe(32)):
        if kube.create_if_absent(manifest, namespace):
            created.append(f"{manifest['kind']}/{manifest['metadata']['name']}")
        elif manifest["kind"] == "ConfigMap":
            kube.core().replace_namespaced_config_map(manifest["metadata"]["name"], namespace, manifest)
    return created


@kopf.on.delete(*RESOURCE)
def cleanup(name: str, namespace: str, logger, **_) -> None:
    """Owner references let the garbage collector remove the owned objects; say so in the log."""
    logger.info("StreamApp %s/%s deleted; its owned objects go with it", namespace, name)


@kopf.daemon(*RESOURCE, cancellation_timeout=10.0, initial_delay=1.0)
def autoscale(stopped: kopf.DaemonStopped, body: kopf.Body, name: str, namespace: str, logger, **_) -> None:
    """The control loop: evaluate the policy every evaluationInterval until the StreamApp goes away."""
    while not stopped:
        try:
            interval = evaluate(_snapshot(body))
            log.info("evaluated %s/%s", namespace, name)
        except ControlError as err:
            ERRORS.labels(kind="control").inc()
            _report_unreachable(body, str(err))
            interval = RETRY_INVALID_S
        except ApiException as err:
            ERRORS.labels(kind="kubernetes").inc()
            logger.warning("Kubernetes API error while evaluating %s/%s: %s", namespace, name, err.reason)
            interval = 5.0
        stopped.wait(interval)


def _snapshot(body: kopf.Body) -> dict[str, Any]:
    """A plain copy of the live body (it changes under us while the daemon runs)."""
    return {"metadata": dict(body["metadata"]), "spec": dict(body["spec"]), "status": dict(body.get("status") or {}),
            "apiVersion": body["apiVersion"], "kind": body["kind"]}


def _report_unreachable(body: kopf.Body, message: str) -> None:
    meta = body["metadata"]
    generation = meta.get("generation", 0)
    conds = list((body.get("status") or {}).get("conditions") or [])
    conds = set_condition(conds, "Ready", False, "JobUnreachable", message, generation)
    conds = set_condition(conds, "Degraded", True, "JobUnreachable", message, generation)
    kube.patch_status(meta["namespace"], "streamapps", meta["name"], {"conditions": conds, "phase": "Degraded"})
