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


def users_app(**application) -> StreamAppSpec:
    return spec(application={"type": "Python", "mainApplicationFile": "local:///opt/app/wc.py",
                             "arguments": ["$(KAFKA)", "lines"], **application},
                executors={"initial": 1, "min": 1, "max": 3},
                source={"type": "kafka", "kafka": {"bootstrapServers": "kafka.jobs.svc:9092", "topic": "lines"}})


def test_a_users_application_runs_unchanged_under_spark_submit_with_the_plugin():
    s = users_app()
    container = managed.driver_pod(BODY, s)["spec"]["containers"][0]
    args = container["args"]
    assert container["command"] == ["spark-submit"]
    assert args[args.index("--deploy-mode") + 1] == "client"
    assert args[-3:] == ["/opt/app/wc.py", "$(KAFKA)", "lines"], "local:// is a path in the pod; $(VAR) for the kubelet"
    assert "--class" not in args and "spark.driver.bindAddress=$(POD_IP)" in args
    c = conf(s)
    assert c["spark.plugins"] == "io.elastream.spark.ElastreamPlugin"
    assert c["spark.elastream.control.tokenFile"] == managed.TOKEN_FILE
    assert (c["spark.elastream.metrics.port"], c["spark.elastream.control.port"]) == (str(managed.METRICS_PORT),
                                                                                     str(managed.CONTROL_PORT))
    assert (c["spark.elastream.executors.min"], c["spark.elastream.executors.max"]) == ("1", "3")
    assert c["spark.elastream.kafka.bootstrapServers"] == "kafka.jobs.svc:9092"  # the backlog, asked of the broker
    assert c["spark.dynamicAllocation.enabled"] == "false" and c["spark.decommission.enabled"] == "true"
    assert container["readinessProbe"]["httpGet"]["port"] == managed.CONTROL_PORT  # the plugin serves /healthz
    # a recreated driver starts with the executors last asked for, as the runner's does
    scaled = managed.driver_pod(BODY, s.model_copy(update={"replicas": 3}))["spec"]["containers"][0]["args"]
    assert "spark.executor.instances=3" in scaled


def test_a_jar_application_gets_its_main_class_and_jars():
    s = users_app(type="Java", mainClass="example.WordCount", mainApplicationFile="/var/lib/elastream/wc.jar",
                  deps={"jars": ["/var/lib/elastream/dep.jar"], "files": ["/var/lib/elastream/words.txt"]})
    args = managed.driver_pod(BODY, s)["spec"]["containers"][0]["args"]
    assert args[args.index("--class") + 1] == "example.WordCount"
    assert args[args.index("--jars") + 1] == "/var/lib/elastream/dep.jar"
    assert args[args.index("--files") + 1] == "/var/lib/elastream/words.txt"
    assert args[-3] == "/var/lib/elastream/wc.jar"


def test_the_built_in_apps_get_no_plugin_conf():
    assert not any(k.startswith("spark.elastream.") or k == "spark.plugins" for k in conf(spec()))


def test_a_relative_main_file_is_refused_in_a_cluster_naming_the_field():
    from elastream.engines.spark.kubernetes import reconcile

    done = reconcile({**BODY, "metadata": {**BODY["metadata"], "generation": 2}},
                     users_app(mainApplicationFile="wc.py"), all_objects=True)
    assert done.said and done.said[0].startswith("spec.spark.application.mainApplicationFile: wc.py is relative")


def test_a_main_file_url_is_left_to_spark_submit_to_fetch():
    s = users_app(type="Java", mainClass="example.WordCount", mainApplicationFile="https://repo.example/wc.jar")
    args = managed.driver_pod(BODY, s)["spec"]["containers"][0]["args"]
    assert args[-3] == "https://repo.example/wc.jar"
    assert managed.driver_pod(BODY, users_app(mainApplicationFile="local:///opt/wc.py"))["spec"]["containers"][0][
        "args"][-3] == "/opt/wc.py"


POD_FIELDS = {
    "env": [{"name": "KAFKA_USER", "valueFrom": {"secretKeyRef": {"name": "kafka-creds", "key": "user"}}}],
    "envFrom": [{"secretRef": {"name": "s3-creds"}}],
    "volumeMounts": [{"name": "certs", "mountPath": "/opt/certs", "readOnly": True}],
    "labels": {"team": "streams"}, "annotations": {"cost-center": "42"},
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "streaming", "effect": "NoSchedule"}],
    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["streaming"]}]}]}}},
    "priorityClassName": "streaming", "memoryOverhead": "512m",
}
CERTS = {"name": "certs", "secret": {"secretName": "kafka-tls"}}


def test_pod_fields_reach_the_driver_pod_beside_the_operators_own():
    s = spec(driver={**POD_FIELDS, "memory": "1g", "serviceAccount": "streams-irsa"}, volumes=[CERTS],
             imagePullSecrets=["registry"])
    pod = managed.driver_pod(BODY, s)
    container = pod["spec"]["containers"][0]
    assert [e["name"] for e in container["env"]] == ["SPARK_CONF_DIR", "POD_IP", "KAFKA_USER"]
    assert container["envFrom"] == [{"secretRef": {"name": "s3-creds"}}]
    assert container["volumeMounts"][-1] == {"name": "certs", "mountPath": "/opt/certs", "readOnly": True}
    assert pod["spec"]["volumes"][-1] == CERTS and len(pod["spec"]["volumes"]) == 4
    assert container["resources"]["requests"]["memory"] == "1536Mi"  # heap + overhead
    assert pod["spec"]["serviceAccountName"] == "streams-irsa"
    assert pod["spec"]["imagePullSecrets"] == [{"name": "registry"}]
    assert pod["spec"]["tolerations"] == POD_FIELDS["tolerations"] and pod["spec"]["affinity"] == POD_FIELDS["affinity"]
    assert pod["spec"]["priorityClassName"] == "streaming"
    assert pod["metadata"]["labels"]["team"] == "streams" and pod["metadata"]["labels"]["elastream.io/role"] == "driver"
    assert pod["metadata"]["annotations"]["cost-center"] == "42"
    assert conf(s)["spark.driver.memoryOverhead"] == "512m"


def test_pod_fields_reach_every_executor_through_the_template_and_spark_conf():
    s = spec(executor={**POD_FIELDS, "serviceAccount": "streams-irsa"}, volumes=[CERTS, {"name": "unused", "emptyDir": {}}],
             imagePullSecrets=["registry", "mirror"])
    template = yaml.safe_load(managed.config_map(BODY, s)["data"][managed.EXECUTOR_TEMPLATE])
    (container,) = template["spec"]["containers"]
    assert container["env"] == POD_FIELDS["env"] and container["envFrom"] == POD_FIELDS["envFrom"]
    assert container["volumeMounts"] == POD_FIELDS["volumeMounts"]
    assert template["spec"]["volumes"] == [CERTS]  # only what the executor mounts
    assert template["spec"]["tolerations"] == POD_FIELDS["tolerations"]
    assert template["spec"]["affinity"] == POD_FIELDS["affinity"] and template["spec"]["priorityClassName"] == "streaming"
    assert template["metadata"] == {"labels": {"team": "streams"}, "annotations": {"cost-center": "42"}}
    c = conf(s)
    assert c["spark.executor.memoryOverhead"] == "512m"
    assert c["spark.kubernetes.authenticate.executor.serviceAccountName"] == "streams-irsa"
    assert c["spark.kubernetes.container.image.pullSecrets"] == "registry,mirror"
    driver = managed.driver_pod(BODY, s)["spec"]["containers"][0]  # the executor's fields are the executor's only
    assert [e["name"] for e in driver["env"]] == ["SPARK_CONF_DIR", "POD_IP"] and "envFrom" not in driver
    assert managed.driver_pod(BODY, s)["spec"]["serviceAccountName"] == "wc-spark"


def test_an_app_without_pod_fields_keeps_its_driver_digest():
    """Upgrading the operator must not restart running drivers: unset pod fields add nothing to what is hashed
    (the digest is the one operators before the pod fields computed for this spec)."""
    assert managed.spec_hash(BODY, spec()) == "967d22b4f7358474b0d3ee91c538e369"
    template = yaml.safe_load(managed.config_map(BODY, spec())["data"][managed.EXECUTOR_TEMPLATE])
    assert template == {"apiVersion": "v1", "kind": "Pod", "spec": {"securityContext": managed._security_context()}}
    pod = managed.driver_pod(BODY, spec())
    assert not {"tolerations", "affinity", "priorityClassName", "imagePullSecrets"} & set(pod["spec"])
    assert "envFrom" not in pod["spec"]["containers"][0]
    assert not any(k.startswith("spark.kubernetes.authenticate.executor") or "memoryOverhead" in k for k in conf(spec()))
