"""An operator-managed Spark StreamApp on the real API server: the owned objects appear with owner
references, the driver pod reaches Running on a simulated node, and everything goes on delete."""
import json

import yaml

from tests.manifests import example
from tests.operator_fixtures import operator_in_process, wait_for

CHILDREN = [("pod", "wordcount-driver"), ("service", "wordcount-driver"), ("serviceaccount", "wordcount-spark"),
            ("role", "wordcount-spark"), ("rolebinding", "wordcount-spark"), ("secret", "wordcount-control"),
            ("configmap", "wordcount-config")]


def _get(k, namespace, kind, name):
    proc = k.kubectl("get", kind, name, "-n", namespace, "-o", "json", check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def _reconciles(k, namespace) -> int:
    """How many times the operator reconciled the StreamApp (the events it posts)."""
    events = json.loads(k.kubectl("get", "events", "-n", namespace, "-o", "json").stdout)["items"]
    return sum(e.get("count") or 1 for e in events if e.get("reason") == "Reconciled")


def test_managed_app_objects_lifecycle(crds_installed, namespace):
    k = crds_installed
    app = example("StreamApp")
    app["spec"].pop("policyRef")
    with operator_in_process(k, namespace):
        k.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(app))
        uid = json.loads(k.kubectl("get", "streamapp", "wordcount", "-n", namespace, "-o", "json").stdout)["metadata"]["uid"]
        for kind, name in CHILDREN:
            obj = wait_for(f"{kind}/{name}", lambda: _get(k, namespace, kind, name))
            owners = obj["metadata"].get("ownerReferences") or []
            assert [(o["kind"], o["uid"], o.get("controller")) for o in owners] == [("StreamApp", uid, True)], kind
        pod = wait_for("the driver pod Running", lambda: (p := _get(k, namespace, "pod", "wordcount-driver"))
                       and p["status"].get("phase") == "Running" and p)
        assert pod["spec"]["nodeName"].startswith("node-")
        assert pod["spec"]["serviceAccountName"] == "wordcount-spark"
        config = json.loads(_get(k, namespace, "configmap", "wordcount-config")["data"]["app.json"])
        assert config["master"].startswith("k8s://") and config["conf"]["spark.sql.shuffle.partitions"] == "4"
        # the driver's service account may manage pods, and nothing else
        sa = f"system:serviceaccount:{namespace}:wordcount-spark"
        assert k.kubectl("auth", "can-i", "create", "pods", "-n", namespace, "--as", sa, check=False).stdout.strip() == "yes"
        for verb, res in [("get", "secrets"), ("create", "deployments"), ("delete", "streamapps.elastream.io")]:
            assert k.kubectl("auth", "can-i", verb, res, "-n", namespace, "--as", sa, check=False).stdout.strip() == "no"
        status = wait_for("status.selector", lambda: json.loads(
            k.kubectl("get", "streamapp", "wordcount", "-n", namespace, "-o", "json").stdout).get("status", {}).get("selector"))
        assert status == "elastream.io/app=wordcount"
        # reconciling again (operator restart = resume) creates nothing twice and keeps the token
        token = _get(k, namespace, "secret", "wordcount-control")["data"]["token"]
    with operator_in_process(k, namespace):
        wait_for("the resumed operator to reconcile again", lambda: _reconciles(k, namespace) >= 2)
        assert _get(k, namespace, "secret", "wordcount-control")["data"]["token"] == token
        k.kubectl("delete", "streamapp", "wordcount", "-n", namespace, "--wait=true", "--timeout=60s")
    for kind, name in CHILDREN:
        wait_for(f"{kind}/{name} gone", lambda: _get(k, namespace, kind, name) is None, timeout=90)
