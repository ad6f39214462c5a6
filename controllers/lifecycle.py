"""One reconcile pass of a StreamApp: parse the spec, bring a managed job's objects and driver to it, and write
what happened to status (Progressing; Ready while suspended; phase). Run by the create/update/resume handlers
and, every few seconds, by the StreamApp's loop — so a deleted, failed or evicted driver comes back."""
from __future__ import annotations

from typing import Any, Callable

import kopf
from kubernetes.client.rest import ApiException
from kubernetes.utils import FailToCreateError
from pydantic import ValidationError

from controllers import kube, managed, owned
from controllers.status import (driver_status, failed_status, invalid_status, not_supported_status,
                                progressing_status, suspended_status)
from elastream.api.manifests import describe_errors
from elastream.api.streamapp import StreamAppSpec

STORM_MESSAGE = "the storm backend is not implemented yet: the topology is neither observed nor rescaled"
EVENT_REASONS = {"create": "DriverCreated", "restart": "Restarting", "replace": "DriverReplaced", "stop": "DriverStopped"}


def reconcile(body: dict[str, Any], *, all_objects: bool = True) -> list[str]:
    """One pass; what it did, in words. all_objects=False checks only the driver pod (the frequent pass)."""
    meta = body["metadata"]
    namespace, name, generation = meta["namespace"], meta["name"], meta.get("generation", 0)
    try:
        spec = StreamAppSpec.model_validate(body["spec"])
    except ValidationError as err:
        message = "; ".join(describe_errors(err))
        _write(body, lambda st: invalid_status(st, message, generation))
        return [f"invalid spec: {message}"]
    if spec.engine == "storm":
        _write(body, lambda st: not_supported_status(st, STORM_MESSAGE, generation))
        return [STORM_MESSAGE]
    if spec.spark.attach is not None:
        return _attached(body, spec, generation)
    try:
        done = owned.ensure_objects(body, spec) if all_objects else {}
        action, pod = owned.ensure_driver(body, spec, owned.credentials_renewed(done))
    except (ApiException, FailToCreateError) as err:  # e.g. RBAC: say so in status, then let the caller retry
        message = kube.api_error_message(err)
        _write(body, lambda st: failed_status(st, message, generation))
        raise
    if action.kind in EVENT_REASONS:
        kopf.info(body, reason=EVENT_REASONS[action.kind], message=action.message)
    _write(body, lambda st: driver_status(st, action, pod, generation))
    said = [f"{how.split()[0]} {what}" for what, how in done.items()]
    return said + ([action.message] if action.kind != "keep" else [])


def _attached(body: dict[str, Any], spec: StreamAppSpec, generation: int) -> list[str]:
    if spec.suspend:
        message = "spec.suspend is true: the job is not scaled"
        _write(body, lambda st: suspended_status(st, message, generation))
    else:
        message = f"attached to the job at {spec.spark.attach.control_url}"
        _write(body, lambda st: progressing_status(st, "Attached", message, generation))
    return [message]


def _write(body: dict[str, Any], change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Status as `change` makes it, plus what every pass states: the pods' selector and the generation seen."""
    meta = body["metadata"]
    generation = meta.get("generation", 0)

    def with_common(status: dict[str, Any]) -> dict[str, Any]:
        return {**change(status), "selector": managed.selector(meta["name"]), "observedGeneration": generation}

    kube.update_status(meta["namespace"], meta["name"], with_common, body=body)
