"""Status on the real API server: the reconcile pass and the autoscaling loop write conditions into one list and
neither loses the other's; a missing token Secret (or key) is a condition naming the Secret and the field."""
import pytest

from controllers import kube
from controllers.conditions import get_condition, set_condition
from controllers.status import evaluated_status, progressing_status
from elasticity.model import Decision
from tests.cluster.conftest import apply, condition, managed_app
from tests.operator_fixtures import operator_in_process, wait_for


@pytest.fixture
def client_env(crds_installed, monkeypatch):
    """controllers.kube talking to the test cluster from this process."""
    monkeypatch.setenv("KUBECONFIG", crds_installed.kubeconfig)
    kube.api_client.cache_clear()
    yield crds_installed
    kube.api_client.cache_clear()


def _hold() -> Decision:
    return Decision(job="wordcount", timestamp=1.8e9, policy="elastream", action="hold", current={}, targets={},
                    reason="hold: Prometheus at http://p:9090 is unreachable", guard="metrics")


def test_a_condition_written_meanwhile_by_the_other_writer_is_kept(client_env, namespace):
    k = client_env
    apply(k, namespace, managed_app())
    attempts = []

    def reconcile_writes(status):
        attempts.append(status)
        if len(attempts) == 1:  # between this writer's read and its write, the autoscaling loop writes
            kube.update_status(namespace, "wordcount", lambda st: {
                **st, **evaluated_status(st, _hold(), None, False, "Prometheus is unreachable", 1)})
        return progressing_status(status, "DriverRunning", "the driver pod runs the current spec", 1)

    kube.update_status(namespace, "wordcount", reconcile_writes)
    assert len(attempts) == 2, "the first write must have met a conflict (409) and been redone"
    conditions = kube.get_custom(namespace, "streamapps", "wordcount")["status"]["conditions"]
    assert get_condition(conditions, "Progressing")["reason"] == "DriverRunning"
    assert get_condition(conditions, "MetricsAvailable")["reason"] == "MetricsUnavailable"
    # and the other way round: the loop's write, redone on the reconcile's, keeps Progressing
    first = []

    def loop_writes(status):
        first.append(1)
        if len(first) == 1:
            kube.update_status(namespace, "wordcount", lambda st: {**st, "conditions": set_condition(
                st["conditions"], "Progressing", True, "Restarting", "spec.spark.image changed", 2)})
        return {**status, **evaluated_status(status, _hold(), None, False, "still unreachable", 2)}

    kube.update_status(namespace, "wordcount", loop_writes)
    conditions = kube.get_custom(namespace, "streamapps", "wordcount")["status"]["conditions"]
    assert len(first) == 2 and get_condition(conditions, "Progressing")["reason"] == "Restarting"
    assert get_condition(conditions, "MetricsAvailable")["message"] == "still unreachable"


def test_the_operator_keeps_both_writers_conditions(crds_installed, namespace, data_volume, fast_resync):
    k = crds_installed
    with operator_in_process(k, namespace):
        apply(k, namespace, managed_app())
        wait_for("Progressing (reconcile) and MetricsAvailable (autoscaling loop) side by side",
                 lambda: condition(k, namespace, "Progressing").get("reason") == "DriverRunning"
                 and condition(k, namespace, "MetricsAvailable").get("status") == "False", timeout=90)


def _attached_app() -> dict:
    app = managed_app(attach={"controlURL": "http://127.0.0.1:9/", "tokenSecretRef": {"name": "job-token"}})
    app["spec"]["policy"] = {"evaluationInterval": "2s", "metricsWindow": "1m", "metrics": {"scrapeInterval": "1s"}}
    return app


def test_missing_token_secret_is_a_condition(crds_installed, namespace):
    k = crds_installed
    with operator_in_process(k, namespace):
        apply(k, namespace, _attached_app())
        ready = wait_for("Ready=False SecretNotFound", lambda: (c := condition(k, namespace, "Ready"))
                         .get("reason") == "SecretNotFound" and c)
        assert ready["status"] == "False"
        assert ready["message"] == f"spec.spark.attach.tokenSecretRef: Secret {namespace}/job-token not found"
        assert condition(k, namespace, "Degraded")["reason"] == "SecretNotFound"
        k.kubectl("create", "secret", "generic", "job-token", "-n", namespace, "--from-literal=other=x")
        ready = wait_for("Ready=False SecretKeyNotFound", lambda: (c := condition(k, namespace, "Ready"))
                         .get("reason") == "SecretKeyNotFound" and c)
        assert ready["message"] == (f"spec.spark.attach.tokenSecretRef.key: Secret {namespace}/job-token "
                                    "has no key 'token'")
        apply(k, namespace, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "job-token"},
                             "stringData": {"token": "t"}})
        wait_for("the Secret found (the job itself is unreachable)", lambda: condition(k, namespace, "Ready")
                 .get("reason") not in ("SecretNotFound", "SecretKeyNotFound", None))
