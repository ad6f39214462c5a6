"""kopf handlers of StreamApp: a reconcile pass on create/update/resume, and one loop per StreamApp that keeps its
job running and evaluates its policy. Thin: the work is in controllers.lifecycle and controllers.autoscaling."""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import time
from typing import Any

import kopf
from kubernetes.client.rest import ApiException

from controllers import kube
from controllers.autoscaling import RETRY_INVALID_S, evaluate, write_evaluation
from controllers.conditions import get_condition
from controllers.lanes import Lanes, lanes
from controllers.lifecycle import reconcile
from controllers.metrics import (DECISION_CPU_SECONDS, DESIRED_EXECUTORS, ERRORS, EVALUATION_LAG_SECONDS,
                                 EVALUATION_SECONDS, EVALUATIONS, LATE_EVALUATIONS)
from controllers.schedule import Lateness, Schedule
from controllers.sharding import in_shard
from controllers.status import unavailable_status
from elastream.engines.base import JobUnreachable
from elastream.api import GROUP, VERSION

RESOURCE = (GROUP, VERSION, "streamapps")
PAUSE_SLICE_S = 1.0  # how soon a sleeping loop sees that it is to stop
OBJECTS_EVERY = 6  # every this many pod checks, every other owned object is checked too
log = logging.getLogger(__name__)


@kopf.on.resume(*RESOURCE, when=in_shard)
@kopf.on.create(*RESOURCE, when=in_shard)
@kopf.on.update(*RESOURCE, field="spec", when=in_shard)
async def reconcile_app(body: kopf.Body, uid: str, **_) -> None:
    done = await lanes().run(uid, reconcile, _snapshot(body))
    kopf.event(dict(body), type="Normal", reason="Reconciled", message="; ".join(done) or "owned objects are in place")


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


@kopf.on.event(*RESOURCE, when=lambda type, **_: type == "DELETED")
async def notice_deletion(uid: str, **_) -> None:
    """Without a finalizer kopf does not stop a deleted StreamApp's loop: the watch's DELETED event tells it."""
    DELETED.add(uid)


DELETED: set[str] = set()  # uids of StreamApps whose loops are to end


@_without_finalizer
@kopf.daemon(*RESOURCE, cancellation_backoff=PAUSE_SLICE_S + 1.0, cancellation_timeout=10.0, initial_delay=1.0,
             when=in_shard)
async def supervise(stopped: kopf.DaemonStopped, name: str, namespace: str, meta: kopf.Meta, body: kopf.Body,
                    logger, **_) -> None:
    """Until the StreamApp goes away: let its engine check the pods every few seconds (a deleted, failed or evicted
    driver comes back), every other owned object now and then, and evaluate the policy every evaluationInterval.

    A coroutine: waiting costs no thread. Its blocking steps run one after another (so evaluations of one app never
    overlap) in the lanes' bounded pools (controllers.lanes). Checks use kopf's live body (kept fresh by the
    watch); an evaluation reads the StreamApp first, which also finds it gone when a DELETED event was missed."""
    uid, checks, schedule, resync = meta["uid"], 0, Schedule(), resync_seconds()
    pool = lanes()
    try:
        while not stopped and uid not in DELETED:
            every_object = checks % OBJECTS_EVERY == 0
            if schedule.is_due(time.monotonic()):
                fresh = await pool.run(uid, _guarded, logger, kube.get_custom, namespace, "streamapps", name)
                if fresh is None or (fresh is not FAILED and fresh["metadata"]["uid"] != uid):
                    logger.info("StreamApp %s/%s is gone; its loop ends", namespace, name)
                    return
                await _check(pool, uid, logger, _snapshot(body) if fresh is FAILED else fresh, every_object)
                if fresh is not FAILED:
                    await _evaluate_on_schedule(pool, uid, logger, fresh, schedule)
                else:
                    schedule.done(time.monotonic(), RETRY_AFTER_ERROR_S)
            else:
                await _check(pool, uid, logger, _snapshot(body), every_object)
            checks += 1
            await _pause(stopped, schedule.wait_s(time.monotonic(), resync))
    finally:
        DELETED.discard(uid)
        pool.forget(uid)
        with contextlib.suppress(KeyError):
            DESIRED_EXECUTORS.remove(namespace, name)


RETRY_AFTER_ERROR_S = 5.0
FAILED = object()


async def _pause(stopped: kopf.DaemonStopped, seconds: float) -> None:
    """Sleep, waking within PAUSE_SLICE_S when the loop is asked to stop (kopf then waits cancellation_backoff
    before it cancels). Not `await stopped.wait(seconds)`: its wait_for can turn a stop that coincides with the
    timeout into a TimeoutError that kopf reports as the operator's failure (Python 3.11)."""
    deadline = time.monotonic() + seconds
    while not stopped and (left := deadline - time.monotonic()) > 0:
        await asyncio.sleep(min(left, PAUSE_SLICE_S))


async def _check(pool: Lanes, uid: str, logger, body: dict[str, Any], every_object: bool) -> None:
    await pool.run(uid, _guarded, logger, reconcile, body, all_objects=every_object)


async def _evaluate_on_schedule(pool: Lanes, uid: str, logger, body: dict[str, Any], schedule: Schedule) -> None:
    """One evaluation, timed and judged against its due time; the next one is scheduled when it ends."""
    started = time.monotonic()
    lateness = schedule.start(started)
    _note_lateness(body, lateness)
    EVALUATIONS.inc()
    interval = await pool.run(uid, _guarded, logger, _evaluate, body, lateness)
    ended = time.monotonic()
    EVALUATION_SECONDS.observe(ended - started)
    schedule.done(ended, RETRY_AFTER_ERROR_S if interval is FAILED else interval)


def _note_lateness(body: dict[str, Any], lateness: Lateness | None) -> None:
    """The lag of every evaluation is a metric; a late one is counted, and the first of a run of them is an event
    (the OnSchedule condition, written with the evaluation's status, says it too)."""
    if lateness is None:
        return
    EVALUATION_LAG_SECONDS.observe(lateness.late_by_s)
    if not lateness.late:
        return
    LATE_EVALUATIONS.inc()
    was = get_condition((body.get("status") or {}).get("conditions") or [], "OnSchedule") or {}
    if was.get("status") != "False":
        kopf.event(body, type="Warning", reason="EvaluationLate",
                   message=f"evaluation started {lateness.late_by_s:.0f}s after it was due (evaluationInterval "
                           f"{lateness.interval_s:g}s): the operator cannot keep up")


def _guarded(logger, step, *args, **kwargs):
    """One step of the loop; FAILED (logged and counted) if it raised: the loop outlives any one bad step."""
    try:
        return step(*args, **kwargs)
    except ApiException as err:
        ERRORS.labels(kind="kubernetes").inc()
        logger.warning("Kubernetes API error in %s: %s %s: %s", step.__name__, err.status, err.reason,
                       kube.api_error_message(err))
    except Exception:  # noqa: BLE001 - reported, retried at the next step
        ERRORS.labels(kind="internal").inc()
        logger.exception("%s failed", step.__name__)
    return FAILED


def _evaluate(body: dict[str, Any], lateness: Lateness | None) -> float:
    """One evaluation (in a worker thread); the seconds until the next. An unreachable job is reported in status.
    Its CPU time in this thread is the decision latency without network waits."""
    meta = body["metadata"]
    cpu = time.thread_time()
    try:
        interval = evaluate(body, lateness)
        log.info("evaluated %s/%s", meta["namespace"], meta["name"])
        return interval
    except JobUnreachable as err:
        ERRORS.labels(kind="control").inc()
        generation = meta.get("generation", 0)
        write_evaluation(meta["namespace"], meta["name"],
                         lambda st: unavailable_status(st, "JobUnreachable", str(err), generation), generation)
        return RETRY_INVALID_S
    finally:
        DECISION_CPU_SECONDS.observe(time.thread_time() - cpu)


def _snapshot(body: kopf.Body) -> dict[str, Any]:
    """A plain copy of the live body (it changes under us)."""
    return {"metadata": dict(body["metadata"]), "spec": dict(body["spec"]), "status": dict(body.get("status") or {}),
            "apiVersion": body["apiVersion"], "kind": body["kind"]}
