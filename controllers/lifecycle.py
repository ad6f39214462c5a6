"""One reconcile pass of a StreamApp: parse the spec, let its engine bring the managed objects to it, and write what
happened to status (Progressing; Ready while suspended; phase). Run by the create/update/resume handlers and, every
few seconds, by the StreamApp's loop — so a deleted, failed or evicted pod comes back."""
from __future__ import annotations

from typing import Any, Callable

import kopf
from pydantic import ValidationError

from controllers import kube
from controllers.status import invalid_status, unless_stale
from elastream.api.manifests import describe_errors
from elastream.api.streamapp import StreamAppSpec
from elastream.engines import engine_for
from elastream.engines.base import ReconcileFailed
from elastream.engines.owners import selector


def reconcile(body: dict[str, Any], *, all_objects: bool = True) -> list[str]:
    """One pass; what it did, in words. all_objects=False checks only the pods that come and go (the frequent pass)."""
    generation = body["metadata"].get("generation", 0)
    try:
        spec = StreamAppSpec.model_validate(body["spec"])
    except ValidationError as err:
        message = "; ".join(describe_errors(err))
        _write(body, lambda st: invalid_status(st, message, generation))
        return [f"invalid spec: {message}"]
    try:
        done = engine_for(spec).reconcile(body, spec, all_objects=all_objects)
    except ReconcileFailed as err:  # e.g. RBAC: say so in status, then let the caller retry
        _write(body, err.status)
        raise (err.__cause__ or err) from None  # the API server's error: retried like any other
    for reason, message in done.events:
        kopf.event(body, type="Normal", reason=reason, message=message)
    _write(body, done.status)
    return done.said


def _write(body: dict[str, Any], change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Status as `change` makes it, plus what every pass states: the pods' selector and the generation seen."""
    meta = body["metadata"]
    generation = meta.get("generation", 0)

    def with_common(status: dict[str, Any]) -> dict[str, Any]:
        return {**change(status), "selector": selector(meta["name"]), "observedGeneration": generation}

    kube.update_status(meta["namespace"], meta["name"], unless_stale(with_common, generation), body=body)
