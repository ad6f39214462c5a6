"""A managed Spark app's reconcile pass: its owned objects and driver pod brought to the spec, and the status that
follows (Progressing reasons of the driver's lifecycle; Attached for a job started elsewhere)."""
from __future__ import annotations

from typing import Any

from kubernetes.client.rest import ApiException
from kubernetes.utils import FailToCreateError

from controllers import kube
from controllers.conditions import get_condition
from controllers.status import failed_status, progressing_status, suspended_status
from elastream.api.streamapp import StreamAppSpec
from elastream.engines.base import Reconciled, ReconcileFailed
from elastream.engines.pods import why_not_running
from elastream.engines.spark import owned
from elastream.engines.spark.driver import DriverAction

EVENT_REASONS = {"create": "DriverCreated", "restart": "Restarting", "replace": "DriverReplaced", "stop": "DriverStopped"}


def reconcile(body: dict[str, Any], spec: StreamAppSpec, *, all_objects: bool) -> Reconciled:
    generation = body["metadata"].get("generation", 0)
    if spec.spark.attach is not None:
        return attached(spec, spec.spark.attach.control_url, generation)
    application = spec.spark.application
    main_file = application.main_application_file
    if main_file is not None and not application.main_is_url and not main_file.removeprefix("local://").startswith("/"):
        message = (f"spec.spark.application.mainApplicationFile: {main_file} is relative; in a cluster give "
                   "local:///path in the image, /path on the shared volume or a URL spark-submit can fetch (a "
                   "relative path is for elastream run)")
        return Reconciled([message], lambda st: failed_status(st, message, generation))
    if spec.spark.source.type == "nexmark":  # nothing is created: say why, once per generation
        message = ("spec.spark.source.type: nexmark runs in the local mode only (elastream run starts its Kafka "
                   "broker and producer); in a cluster use type kafka, with a broker the job can reach")
        return Reconciled([message], lambda st: failed_status(st, message, generation))
    try:
        done = owned.ensure_objects(body, spec) if all_objects else {}
        action, pod = owned.ensure_driver(body, spec, owned.credentials_renewed(done))
    except (ApiException, FailToCreateError) as err:  # e.g. RBAC: say so in status, then let the caller retry
        message = kube.api_error_message(err)
        raise ReconcileFailed(message, lambda st: failed_status(st, message, generation)) from err
    events = [(EVENT_REASONS[action.kind], action.message)] if action.kind in EVENT_REASONS else []
    said = [f"{how.split()[0]} {what}" for what, how in done.items()]
    return Reconciled(said + ([action.message] if action.kind != "keep" else []),
                      lambda st: driver_status(st, action, pod, generation), events)


def attached(spec, where: str, generation: int) -> Reconciled:
    """An attached job (any engine): nothing to create; Progressing says where it is (or that it is suspended)."""
    if spec.suspend:
        message = "spec.suspend is true: the job is not scaled"
        return Reconciled([message], lambda st: suspended_status(st, message, generation))
    message = f"attached to the job at {where}"
    return Reconciled([message], lambda st: progressing_status(st, "Attached", message, generation))


# Progressing reasons of a driver on its way; the next step keeps them until the driver pod runs
DRIVER_ON_ITS_WAY = ("Restarting", "DriverReplaced", "DriverCreated")


def driver_status(old: dict[str, Any], action: DriverAction, pod: dict[str, Any] | None,
                  generation: int) -> dict[str, Any]:
    """Status after one step of the driver's lifecycle (elastream.engines.spark.driver.plan)."""
    progressing = get_condition(old.get("conditions") or [], "Progressing") or {}
    if action.kind == "stop" or (action.kind == "keep" and pod is None):
        return suspended_status(old, action.message, generation)
    if action.kind in ("restart", "replace"):
        reason = "Restarting" if action.kind == "restart" else "DriverReplaced"
        return progressing_status(old, reason, action.message, generation)
    if action.kind == "wait" or (action.kind == "create" and progressing.get("reason") in DRIVER_ON_ITS_WAY):
        return old  # still on its way: the condition keeps saying why
    if action.kind == "create":
        return progressing_status(old, "DriverCreated", action.message, generation)
    stuck = _stuck(pod)
    if stuck:
        return progressing_status(old, "DriverWaiting", stuck, generation)
    if (pod.get("status") or {}).get("phase") == "Running":
        return progressing_status(old, "DriverRunning", "the driver pod runs the current spec", generation)
    if progressing.get("reason") in DRIVER_ON_ITS_WAY:
        return old
    return progressing_status(old, "DriverPending", "the driver pod is pending", generation)


def _stuck(pod: dict[str, Any]) -> str | None:
    """What keeps the driver from running, in Kubernetes' words: the scheduler cannot place it (e.g. its claim is
    unbound), its image cannot be pulled, it crashes over and over."""
    why = why_not_running(pod)
    if why is None:
        return None
    container, detail = why
    return f"the driver container is waiting: {detail}" if container else f"the driver pod is not scheduled: {detail}"


