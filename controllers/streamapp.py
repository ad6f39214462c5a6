"""kopf handlers of StreamApp: a reconcile pass on create/update/resume, and one loop per StreamApp that keeps its
job running and evaluates its policy. Thin: the work is in controllers.lifecycle and controllers.autoscaling."""
from __future__ import annotations

import dataclasses
import logging
import os
import time
from typing import Any

import kopf
from kubernetes.client.rest import ApiException

from controllers import kube
from controllers.autoscaling import RETRY_INVALID_S, evaluate
from controllers.lifecycle import reconcile
from controllers.metrics import ERRORS
from controllers.status import unavailable_status
from elastream.engines.base import JobUnreachable
from elastream.api import GROUP, VERSION

RESOURCE = (GROUP, VERSION, "streamapps")
OBJECTS_EVERY = 6  # every this many pod checks, every other owned object is checked too
log = logging.getLogger(__name__)


@kopf.on.resume(*RESOURCE)
@kopf.on.create(*RESOURCE)
@kopf.on.update(*RESOURCE, field="spec")
def reconcile_app(body: kopf.Body, **_) -> None:
    done = reconcile(_snapshot(body))
    kopf.info(dict(body), reason="Reconciled", message="; ".join(done) or "owned objects are in place")


def resync_seconds() -> float:
    """How often a StreamApp's loop checks its pods ($ELASTREAM_RESYNC_SECONDS, default 10)."""
    return float(os.environ.get("ELASTREAM_RESYNC_SECONDS", "10"))


def _without_finalizer(fn):
    """kopf guards every daemon with a finalizer, so a StreamApp deleted while no operator runs (after `helm
    uninstall`) would hang. Ours needs none: the loop ends by itself once its StreamApp is gone, and owner
    references let the garbage collector remove what it owned. kopf has no switch for it: this clears the flag of
    the registered handler (tests/unit/test_operator_registration.py fails if a kopf upgrade changes that)."""
    spawning = kopf.get_default_registry()._spawning
    spawning._handlers = [dataclasses.replace(h, requires_finalizer=False) if h.fn is fn else h
                          for h in spawning._handlers]
    return fn


@_without_finalizer
@kopf.daemon(*RESOURCE, cancellation_timeout=10.0, initial_delay=1.0)
def supervise(stopped: kopf.DaemonStopped, name: str, namespace: str, meta: kopf.Meta, logger, **_) -> None:
    """Until the StreamApp goes away: let its engine check the pods every few seconds (a deleted, failed or evicted
    driver comes back), every other owned object now and then, and evaluate the policy every evaluationInterval."""
    uid, checks, next_evaluation, resync = meta["uid"], 0, 0.0, resync_seconds()
    while not stopped:
        body = _guarded(logger, kube.get_custom, namespace, "streamapps", name)
        if body is None or (body is not FAILED and body["metadata"]["uid"] != uid):
            logger.info("StreamApp %s/%s is gone; its loop ends", namespace, name)
            return
        if body is not FAILED:
            _guarded(logger, reconcile, body, all_objects=checks % OBJECTS_EVERY == 0)
            checks += 1
            if time.monotonic() >= next_evaluation:
                interval = _guarded(logger, _evaluate, body)
                next_evaluation = time.monotonic() + (5.0 if interval is FAILED else interval)
        stopped.wait(max(0.5, min(resync, next_evaluation - time.monotonic())))


FAILED = object()


def _guarded(logger, step, *args, **kwargs):
    """One step of the loop; FAILED (logged and counted) if it raised: the loop outlives any one bad step."""
    try:
        return step(*args, **kwargs)
    except ApiException as err:
        ERRORS.labels(kind="kubernetes").inc()
        logger.warning("Kubernetes API error in %s: %s %s", step.__name__, err.status, err.reason)
    except Exception:  # noqa: BLE001 - reported, retried at the next step
        ERRORS.labels(kind="internal").inc()
        logger.exception("%s failed", step.__name__)
    return FAILED


def _evaluate(body: dict[str, Any]) -> float:
    """One evaluation; the seconds until the next. An unreachable job is reported in status."""
    meta = body["metadata"]
    try:
        interval = evaluate(body)
        log.info("evaluated %s/%s", meta["namespace"], meta["name"])
        return interval
    except JobUnreachable as err:
        ERRORS.labels(kind="control").inc()
        kube.update_status(meta["namespace"], meta["name"],
                           lambda st: unavailable_status(st, "JobUnreachable", str(err), meta.get("generation", 0)))
        return RETRY_INVALID_S


def _snapshot(body: kopf.Body) -> dict[str, Any]:
    """A plain copy of the live body (it changes under us)."""
    return {"metadata": dict(body["metadata"]), "spec": dict(body["spec"]), "status": dict(body.get("status") or {}),
            "apiVersion": body["apiVersion"], "kind": body["kind"]}
