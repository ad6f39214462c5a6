"""What happens to the driver pod: created, kept, restarted for a new spec, replaced when it ended, stopped while
suspended — and the status each step writes."""
import json

from controllers.conditions import get_condition
from elastream.engines.spark.driver import DriverAction, plan
from elastream.engines.spark.managed import SPEC_FIELDS, SPEC_HASH
from elastream.engines.spark.kubernetes import driver_status


def pod(hash_="h1", fields=None, phase="Running", created="2026-11-22T10:00:00Z", **status):
    fields = fields or {"spec.spark.image": "a", "spec.spark.conf": "c"}
    return {"metadata": {"creationTimestamp": created,
                         "annotations": {SPEC_HASH: hash_, SPEC_FIELDS: json.dumps(fields)}},
            "status": {"phase": phase, **status}}


WANTED = pod()


def test_missing_driver_is_created_and_a_current_one_kept():
    assert plan(None, WANTED, suspended=False).kind == "create"
    assert plan(pod(), WANTED, suspended=False).kind == "keep"


def test_a_new_spec_restarts_the_driver_naming_what_changed():
    running = pod("h0", {"spec.spark.image": "old", "spec.spark.conf": "c"})
    action = plan(running, WANTED, suspended=False)
    assert action == DriverAction("restart", "spec.spark.image changed: restarting the driver (it resumes from "
                                             "the checkpoint)")
    assert plan(pod("h0"), WANTED, False).message.startswith("the driver's pod template (a new operator version)")


def test_an_ended_driver_is_replaced():
    evicted = pod(phase="Failed", reason="Evicted", message="low on memory")
    action = plan(evicted, WANTED, suspended=False)
    assert action.kind == "replace" and "failed (Evicted: low on memory)" in action.message
    assert plan(pod(phase="Succeeded"), WANTED, suspended=False).kind == "replace"


def test_a_terminating_driver_is_waited_for():
    terminating = pod("h0")
    terminating["metadata"]["deletionTimestamp"] = "2026-11-22T10:00:00Z"
    assert plan(terminating, WANTED, suspended=False).kind == "wait"
    assert plan(terminating, WANTED, suspended=True).kind == "wait"


def test_suspend_stops_the_driver():
    assert plan(pod(), WANTED, suspended=True).kind == "stop"
    assert plan(None, WANTED, suspended=True).kind == "keep"


def test_credentials_created_again_restart_a_driver_started_before_them():
    renewed = {"Secret/wc-control": "2026-11-22T11:00:00Z"}
    action = plan(pod(created="2026-11-22T10:00:00Z"), WANTED, False, renewed)
    assert action.kind == "restart" and action.message.startswith("Secret/wc-control created again")
    assert plan(pod(created="2026-11-22T11:00:00Z"), WANTED, False, renewed).kind == "keep"


def test_status_of_each_step():
    restarting = driver_status({}, DriverAction("restart", "spec.spark.image changed: restarting"), pod(), 4)
    progressing = get_condition(restarting["conditions"], "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("True", "Restarting")
    # the new driver's creation and its pending start keep saying why it restarted
    created = driver_status(restarting, DriverAction("create", "created the driver pod"), None, 4)
    assert get_condition(created["conditions"], "Progressing")["reason"] == "Restarting"
    pending = driver_status(created, DriverAction("keep", "runs"), pod(phase="Pending"), 4)
    assert get_condition(pending["conditions"], "Progressing")["reason"] == "Restarting"
    running = driver_status(pending, DriverAction("keep", "runs"), pod(), 4)
    assert get_condition(running["conditions"], "Progressing")["reason"] == "DriverRunning"
    suspended = driver_status(running, DriverAction("stop", "spec.suspend is true"), pod(), 5)
    assert suspended["phase"] == "Suspended"
    assert {c["type"]: (c["status"], c["reason"]) for c in suspended["conditions"]}["Ready"] == ("False", "Suspended")
    resumed = driver_status(suspended, DriverAction("create", "created the driver pod"), None, 6)
    assert resumed["phase"] == "Pending" and get_condition(resumed["conditions"], "Ready")["reason"] == "Starting"


def test_a_driver_the_scheduler_cannot_place_says_why():
    unscheduled = pod(phase="Pending", conditions=[{"type": "PodScheduled", "status": "False", "message":
                                                    "0/3 nodes are available: pod has unbound immediate "
                                                    "PersistentVolumeClaims."}])
    created = driver_status({}, DriverAction("create", "created the driver pod"), None, 1)
    status = driver_status(created, DriverAction("keep", ""), unscheduled, 1)
    progressing = get_condition(status["conditions"], "Progressing")
    assert progressing["reason"] == "DriverWaiting" and "unbound immediate PersistentVolumeClaims" in progressing["message"]
    crashing = pod(containerStatuses=[{"name": "driver", "state": {"waiting": {
        "reason": "CrashLoopBackOff", "message": "back-off 40s restarting failed container"}}}])
    status = driver_status(status, DriverAction("keep", ""), crashing, 1)
    assert get_condition(status["conditions"], "Progressing")["message"] == (
        "the driver container is waiting: CrashLoopBackOff: back-off 40s restarting failed container")


def test_a_crash_looping_driver_says_how_its_last_run_ended():
    tail = ("INFO starting\nERROR Utils: uncaught exception\nTraceback (most recent call last):\n"
            "checkpoint /data/cp belongs to a run with different source; use a new checkpoint directory\n"
            "26/11/25 05:51:43 INFO py4j.clientserver: Closing down clientserver connection\n")
    crashing = pod(containerStatuses=[{"name": "driver",
                                       "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
                                       "lastState": {"terminated": {"exitCode": 1, "message": tail}}}])
    created = driver_status({}, DriverAction("create", "created the driver pod"), None, 1)
    message = get_condition(driver_status(created, DriverAction("keep", ""), crashing, 1)["conditions"],
                            "Progressing")["message"]
    assert message == ("the driver container is waiting: CrashLoopBackOff: back-off 40s; last run exited 1: "
                       "checkpoint /data/cp belongs to a run with different source; use a new checkpoint directory")
    assert driver_pod_has_log_fallback()


def driver_pod_has_log_fallback() -> bool:
    from elastream.api.manifests import parse_manifest
    from elastream.engines.spark.managed import driver_pod
    from tests.manifests import example

    doc = example("StreamApp")
    _, _, spec = parse_manifest(doc)
    body = {**doc, "metadata": {"name": "wordcount", "namespace": "default", "uid": "u"}}
    (container,) = driver_pod(body, spec)["spec"]["containers"]
    return container["terminationMessagePolicy"] == "FallbackToLogsOnError"
