"""The manifests of a managed Spark app: shared volume in driver and executors, scheduling, discovery, RBAC, and
the digests a driver restart is decided on."""
import json

import yaml

from elastream.engines.spark import managed
from elastream.api.streamapp import StreamAppSpec

BODY = {"apiVersion": "elastream.io/v1alpha1", "kind": "StreamApp",
        "metadata": {"name": "wc", "namespace": "jobs", "uid": "u-1"}}


def spec(**spark) -> StreamAppSpec:
    return StreamAppSpec.model_validate({"engine": "spark", "spark": spark})


def conf(s: StreamAppSpec) -> dict:
    return managed.app_config("wc", "jobs", s)["conf"]


def test_the_operator_creates_a_read_write_many_claim_unless_one_is_named():
    claim = managed.persistent_volume_claim(BODY, spec(storage={"size": "5Gi", "storageClassName": "nfs"}))
    assert claim["metadata"]["name"] == "wc-data" and claim["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    assert claim["spec"] == {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "5Gi"}},
                             "storageClassName": "nfs"}
    assert [o["kind"] for o in managed.owned_objects(BODY, spec(), "t")].count("PersistentVolumeClaim") == 1
    named = spec(storage={"claimName": "team-nfs"})
    assert managed.persistent_volume_claim(BODY, named) is None
    assert "PersistentVolumeClaim" not in [o["kind"] for o in managed.owned_objects(BODY, named, "t")]


def test_driver_and_executors_mount_the_same_claim():
    s = spec(storage={"claimName": "team-nfs"})
    pod = managed.driver_pod(BODY, s)
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "team-nfs"}} in pod["spec"]["volumes"]
    assert {"name": "data", "mountPath": "/var/lib/elastream"} in pod["spec"]["containers"][0]["volumeMounts"]
    c = conf(s)
    prefix = "spark.kubernetes.executor.volumes.persistentVolumeClaim.data"
    assert c[f"{prefix}.options.claimName"] == "team-nfs" and c[f"{prefix}.mount.path"] == "/var/lib/elastream"
    args = pod["spec"]["containers"][0]["args"]
    assert args[args.index("--checkpoint") + 1] == "/var/lib/elastream/wc/checkpoint"
    assert args[args.index("--sink") + 1] == "/var/lib/elastream/wc/sink"


def test_driver_and_executors_run_as_one_user_with_a_group_owning_the_volume():
    pod = managed.driver_pod(BODY, spec())
    template = yaml.safe_load(managed.config_map(BODY, spec())["data"][managed.EXECUTOR_TEMPLATE])
    assert pod["spec"]["securityContext"] == template["spec"]["securityContext"]
    assert pod["spec"]["securityContext"]["fsGroup"] == pod["spec"]["securityContext"]["runAsUser"] == 185
    assert conf(spec())["spark.kubernetes.executor.podTemplateFile"] == "/etc/elastream/executor-pod-template.yaml"


def test_node_selector_and_pull_policy_reach_driver_and_executors():
    s = spec(nodeSelector={"pool": "streaming"}, imagePullPolicy="Always")
    pod = managed.driver_pod(BODY, s)
    assert pod["spec"]["nodeSelector"] == {"pool": "streaming"}
    assert pod["spec"]["containers"][0]["imagePullPolicy"] == "Always"
    assert conf(s)["spark.kubernetes.node.selector.pool"] == "streaming"
    assert conf(s)["spark.kubernetes.container.image.pullPolicy"] == "Always"
    assert "nodeSelector" not in managed.driver_pod(BODY, spec())["spec"]
    assert managed.driver_pod(BODY, spec())["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"


def test_labels_discovery_and_service():
    pod = managed.driver_pod(BODY, spec())
    assert pod["metadata"]["labels"]["elastream.io/role"] == "driver"
    assert {k: v for k, v in pod["metadata"]["annotations"].items() if k.startswith("prometheus.io/")} == {
        "prometheus.io/scrape": "true", "prometheus.io/port": "9108", "prometheus.io/path": "/metrics"}
    c = conf(spec())
    assert (c["spark.kubernetes.executor.label.elastream.io/app"], c["spark.kubernetes.executor.label.elastream.io/role"]
            ) == ("wc", "executor")
    assert managed.service(BODY)["spec"]["publishNotReadyAddresses"] is True


def test_the_driver_role_holds_what_spark_does_and_nothing_more():
    rules = {r["resources"][0]: set(r["verbs"]) for r in managed.role(BODY)["rules"]}
    assert {"create", "delete", "deletecollection", "patch", "watch"} <= rules["pods"]
    assert "deletecollection" in rules["configmaps"]
    assert rules["persistentvolumeclaims"] == {"list", "deletecollection"}
    assert set(rules) == {"pods", "configmaps", "persistentvolumeclaims"}
    assert conf(spec())["spark.kubernetes.driver.service.deleteOnTermination"] == "false"


def test_spec_hash_ignores_replicas_and_follows_what_the_driver_runs():
    base = spec(executors={"initial": 1, "min": 1, "max": 4})
    scaled = base.model_copy(update={"replicas": 3})
    assert managed.spec_hash(BODY, scaled) == managed.spec_hash(BODY, base)
    assert "--executors" in (args := managed.driver_pod(BODY, scaled)["spec"]["containers"][0]["args"])
    assert args[args.index("--executors") + 1] == "3", "a recreated driver starts with the executors last asked for"
    for change in ({"image": "x:2"}, {"conf": {"spark.a": "b"}}, {"triggerInterval": "5s"}):
        other = spec(executors={"initial": 1, "min": 1, "max": 4}, **change)
        assert managed.spec_hash(BODY, other) != managed.spec_hash(BODY, base), change
    fields = json.loads(managed.driver_pod(BODY, base)["metadata"]["annotations"][managed.SPEC_FIELDS])
    assert "spec.spark.image" in fields and "spec.spark.attach" not in fields


def test_a_file_application_runs_with_its_arguments():
    s = spec(application={"file": "/var/lib/elastream/apps/top.py", "args": ["10", "--window=5s"]})
    args = managed.driver_pod(BODY, s)["spec"]["containers"][0]["args"]
    assert args[:4] == ["--app-file", "/var/lib/elastream/apps/top.py", "--app-arg=10", "--app-arg=--window=5s"]
    assert "--app" not in args


def test_fix_permissions_is_an_opt_in_root_init_container_with_only_ownership_capabilities():
    assert "initContainers" not in managed.driver_pod(BODY, spec())["spec"]
    (init,) = managed.driver_pod(BODY, spec(storage={"fixPermissions": True}))["spec"]["initContainers"]
    assert init["securityContext"]["runAsUser"] == 0
    assert init["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["CHOWN", "DAC_OVERRIDE", "FOWNER"]}
    assert "chown 185:185 /var/lib/elastream/wc" in init["command"][-1]
    assert init["volumeMounts"] == [{"name": managed.VOLUME, "mountPath": "/var/lib/elastream"}]


def test_the_driver_requests_spark_driver_request_cores_when_the_conf_sets_it():
    def cpu(s):
        return managed.driver_pod(BODY, s)["spec"]["containers"][0]["resources"]["requests"]["cpu"]

    assert cpu(spec(driver={"cores": 2})) == "2"
    assert cpu(spec(driver={"cores": 1}, conf={"spark.kubernetes.driver.request.cores": "250m"})) == "250m"
