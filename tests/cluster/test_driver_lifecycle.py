"""The driver pod of a managed StreamApp on the real API server: recreated when deleted, replaced when it failed,
stopped and started again by spec.suspend, restarted (with an event and, while it lasts, a condition saying why)
when the spec it runs changes — but not when only spec.replicas does."""
import json
import time

import pytest

from tests.cluster.conftest import apply, condition, events, get, managed_app, status
from tests.operator_fixtures import operator_in_process, wait_for

DRIVER = "wordcount-driver"


@pytest.fixture
def running_app(crds_installed, namespace, data_volume, fast_resync):
    """The operator (checking drivers every 2 s) and a managed StreamApp whose driver pod runs."""
    k = crds_installed
    with operator_in_process(k, namespace):
        apply(k, namespace, managed_app())
        wait_for("the driver pod Running", lambda: _driver(k, namespace).get("status", {}).get("phase") == "Running")
        yield k


def _driver(k, namespace) -> dict:
    return get(k, namespace, "pod", DRIVER) or {}


def _uid(k, namespace) -> str | None:
    return _driver(k, namespace).get("metadata", {}).get("uid")


def _new_driver(k, namespace, old_uid: str, what: str) -> dict:
    return wait_for(what, lambda: (p := _driver(k, namespace)) and p["metadata"]["uid"] != old_uid
                    and not p["metadata"].get("deletionTimestamp") and p, timeout=60)


def test_deleted_driver_is_recreated(running_app, namespace):
    k, old = running_app, _uid(running_app, namespace)
    k.kubectl("delete", "pod", DRIVER, "-n", namespace, "--wait=false")
    _new_driver(k, namespace, old, "a new driver pod")
    assert any("created the driver pod" in m for m in events(k, namespace, "DriverCreated"))


def test_evicted_driver_is_replaced(running_app, namespace):
    k, old = running_app, _uid(running_app, namespace)
    evicted = {"status": {"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."}}
    k.kubectl("patch", "pod", DRIVER, "-n", namespace, "--subresource=status", "--type=merge", "-p", json.dumps(evicted))
    _new_driver(k, namespace, old, "the evicted driver replaced")
    # waited for: kopf posts the event from its own queue, not in step with the pod the next pass creates
    replaced = wait_for("a DriverReplaced event", lambda: events(k, namespace, "DriverReplaced"))
    assert replaced and "failed (Evicted: The node was low on resource: memory.)" in replaced[0], replaced


def test_suspend_deletes_the_driver_and_resume_recreates_it(running_app, namespace):
    k, old = running_app, _uid(running_app, namespace)
    k.kubectl("patch", "streamapp", "wordcount", "-n", namespace, "--type=merge", "-p", '{"spec": {"suspend": true}}')
    wait_for("the driver pod gone", lambda: not _driver(k, namespace))
    wait_for("phase Suspended", lambda: status(k, namespace).get("phase") == "Suspended")
    for type_ in ("Progressing", "Ready"):
        cond = condition(k, namespace, type_)
        assert (cond["status"], cond["reason"]) == ("False", "Suspended"), cond
    assert get(k, namespace, "persistentvolumeclaim", "wordcount-data"), "the checkpoint's volume must stay"
    k.kubectl("patch", "streamapp", "wordcount", "-n", namespace, "--type=merge", "-p", '{"spec": {"suspend": false}}')
    _new_driver(k, namespace, old, "the driver pod back")
    wait_for("phase no longer Suspended", lambda: status(k, namespace).get("phase") != "Suspended")
    assert condition(k, namespace, "Ready")["reason"] != "Suspended"


def test_spec_change_restarts_the_driver_and_says_why(running_app, namespace):
    k, old = running_app, _uid(running_app, namespace)
    old_hash = _driver(k, namespace)["metadata"]["annotations"]["elastream.io/spec-hash"]
    k.kubectl("patch", "streamapp", "wordcount", "-n", namespace, "--type=merge",
              "-p", '{"spec": {"spark": {"image": "example.org/spark-runner:0.2.0", "triggerInterval": "5s"}}}')
    # the Restarting condition lasts only until the new driver runs (a moment on these nodes, where a poll on a
    # busy machine can miss it): the event says the same and stays
    said = wait_for("a Restarting event", lambda: events(k, namespace, "Restarting"))
    assert any("spec.spark.image, spec.spark.triggerInterval changed" in m for m in said), said
    pod = _new_driver(k, namespace, old, "the restarted driver")
    assert pod["spec"]["containers"][0]["image"] == "example.org/spark-runner:0.2.0"
    assert pod["metadata"]["annotations"]["elastream.io/spec-hash"] != old_hash
    config = json.loads(get(k, namespace, "configmap", "wordcount-config")["data"]["app.json"])
    assert config["triggerInterval"] == "5s", "the ConfigMap follows the spec"
    wait_for("Progressing DriverRunning", lambda: condition(k, namespace, "Progressing").get("reason") == "DriverRunning")


def test_replicas_change_is_not_a_restart(running_app, namespace):
    k, old = running_app, _uid(running_app, namespace)
    k.kubectl("scale", "streamapp/wordcount", "--replicas=2", "-n", namespace)
    generation = get(k, namespace, "streamapp", "wordcount")["metadata"]["generation"]
    wait_for("the new generation reconciled", lambda: status(k, namespace).get("observedGeneration") == generation)
    time.sleep(6)  # three driver checks
    assert _uid(k, namespace) == old and condition(k, namespace, "Progressing").get("reason") != "Restarting"


def test_a_claim_nothing_can_bind_is_reported(crds_installed, namespace, fast_resync):
    """No volume for the operator's ReadWriteMany claim (no provisioner here): the condition quotes the scheduler."""
    k = crds_installed
    with operator_in_process(k, namespace):
        apply(k, namespace, managed_app())
        waiting = wait_for("Progressing DriverWaiting", lambda: (c := condition(k, namespace, "Progressing"))
                           .get("reason") == "DriverWaiting" and c)
        assert "unbound immediate PersistentVolumeClaims" in waiting["message"], waiting
