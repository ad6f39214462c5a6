"""An operator-managed Spark StreamApp on the real API server: the owned objects appear with owner
references, the driver pod reaches Running on a simulated node, and everything goes on delete."""
import json

from tests.cluster.conftest import apply, condition, get, managed_app
from tests.operator_fixtures import operator_in_process, wait_for

CHILDREN = [("pod", "wordcount-driver"), ("service", "wordcount-driver"), ("serviceaccount", "wordcount-spark"),
            ("role", "wordcount-spark"), ("rolebinding", "wordcount-spark"), ("secret", "wordcount-control"),
            ("configmap", "wordcount-config"), ("persistentvolumeclaim", "wordcount-data")]


def _reconciles(k, namespace) -> int:
    """How many times the operator reconciled the StreamApp (the events it posts)."""
    events = json.loads(k.kubectl("get", "events", "-n", namespace, "-o", "json").stdout)["items"]
    return sum(e.get("count") or 1 for e in events if e.get("reason") == "Reconciled")


def test_managed_app_objects_lifecycle(crds_installed, namespace, data_volume):
    k = crds_installed
    with operator_in_process(k, namespace):
        apply(k, namespace, managed_app(nodeSelector={"type": "kwok"}, imagePullPolicy="Never"))
        uid = get(k, namespace, "streamapp", "wordcount")["metadata"]["uid"]
        for kind, name in CHILDREN:
            obj = wait_for(f"{kind}/{name}", lambda: get(k, namespace, kind, name))
            owners = obj["metadata"].get("ownerReferences") or []
            assert [(o["kind"], o["uid"], o.get("controller")) for o in owners] == [("StreamApp", uid, True)], kind
        pod = wait_for("the driver pod Running", lambda: (p := get(k, namespace, "pod", "wordcount-driver"))
                       and p["status"].get("phase") == "Running" and p)
        assert pod["spec"]["nodeName"].startswith("node-") and pod["spec"]["nodeSelector"] == {"type": "kwok"}
        assert pod["spec"]["serviceAccountName"] == "wordcount-spark"
        assert pod["metadata"]["labels"]["elastream.io/role"] == "driver"
        assert pod["metadata"]["annotations"]["prometheus.io/port"] == "9108"
        assert pod["spec"]["containers"][0]["imagePullPolicy"] == "Never"
        assert pod["spec"]["securityContext"]["fsGroup"] == 185
        volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "data")
        assert volume["persistentVolumeClaim"]["claimName"] == "wordcount-data"
        claim = get(k, namespace, "persistentvolumeclaim", "wordcount-data")
        assert claim["spec"]["accessModes"] == ["ReadWriteMany"] and claim["status"]["phase"] == "Bound"
        assert get(k, namespace, "service", "wordcount-driver")["spec"]["publishNotReadyAddresses"] is True
        config = json.loads(get(k, namespace, "configmap", "wordcount-config")["data"]["app.json"])
        conf = config["conf"]
        assert config["master"].startswith("k8s://") and conf["spark.sql.shuffle.partitions"] == "4"
        assert conf["spark.kubernetes.executor.volumes.persistentVolumeClaim.data.options.claimName"] == "wordcount-data"
        assert conf["spark.kubernetes.node.selector.type"] == "kwok"
        assert conf["spark.kubernetes.container.image.pullPolicy"] == "Never"
        assert config["checkpointLocation"] == "/var/lib/elastream/wordcount/checkpoint"
        # the driver's service account may manage pods (as Spark does: deletecollection too), and nothing else
        sa = f"system:serviceaccount:{namespace}:wordcount-spark"

        def can(verb, res):
            return k.kubectl("auth", "can-i", verb, res, "-n", namespace, "--as", sa, check=False).stdout.strip()

        for verb, res in [("create", "pods"), ("deletecollection", "pods"), ("deletecollection", "configmaps")]:
            assert can(verb, res) == "yes", f"the driver cannot {verb} {res}"
        for verb, res in [("get", "secrets"), ("create", "deployments"), ("delete", "streamapps.elastream.io"),
                          ("delete", "persistentvolumeclaims")]:
            assert can(verb, res) == "no", f"the driver may {verb} {res}"
        app = wait_for("status.selector", lambda: get(k, namespace, "streamapp", "wordcount").get("status", {})
                       .get("selector") and get(k, namespace, "streamapp", "wordcount"))
        assert app["status"]["selector"] == "elastream.io/app=wordcount"
        assert not app["metadata"].get("finalizers"), "a finalizer would block deletion without an operator"
        wait_for("Progressing DriverRunning", lambda: condition(k, namespace, "Progressing").get("reason")
                 == "DriverRunning")
        # reconciling again (operator restart = resume) creates nothing twice and keeps the token
        token = get(k, namespace, "secret", "wordcount-control")["data"]["token"]
        driver_uid = get(k, namespace, "pod", "wordcount-driver")["metadata"]["uid"]
    with operator_in_process(k, namespace):
        wait_for("the resumed operator to reconcile again", lambda: _reconciles(k, namespace) >= 2)
        assert get(k, namespace, "secret", "wordcount-control")["data"]["token"] == token
        assert get(k, namespace, "pod", "wordcount-driver")["metadata"]["uid"] == driver_uid
    # no operator runs: the StreamApp is still deleted at once, and the garbage collector removes what it owned
    k.kubectl("delete", "streamapp", "wordcount", "-n", namespace, "--wait=true", "--timeout=30s")
    for kind, name in CHILDREN:
        wait_for(f"{kind}/{name} gone", lambda: get(k, namespace, kind, name) is None, timeout=90)
