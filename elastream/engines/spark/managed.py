"""The Kubernetes objects of an operator-managed Spark StreamApp, as plain manifests.

The driver runs the spark_apps runner with a `k8s://` master — or, for a user's own application
(spec.spark.application.mainApplicationFile), spark-submit in client mode with elastream's Spark plugin, which the
image carries on Spark's classpath; Spark creates the executors as pods owned by
the driver pod. Driver and executors mount one shared volume at /var/lib/elastream (checkpoint and sink: the
state store and the sink files are written by executors). The driver's ServiceAccount may manage pods and their
config maps in its namespace, nothing else. Every object carries an owner reference to the StreamApp, so deleting
the StreamApp removes them all.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

import yaml

from elastream.api.streamapp import DATA_PATH, StreamAppSpec
from elastream.engines.owners import LABEL_APP, LABEL_ROLE, object_meta as _meta, owner_reference, selector  # noqa: F401
from elastream.engines.pods import TERMINATION_MESSAGE_POLICY
from elastream.engines.spark.plugin_conf import plugin_conf, submit_args
from elastream.engines.spark.runner_args import runner_args

METRICS_PORT = 9108
CONTROL_PORT = 9109
UI_PORT = 4040
DRIVER_PORT = 7078
BLOCK_MANAGER_PORT = 7079
SPEC_HASH = "elastream.io/spec-hash"  # on the driver pod: digest of its template and the ConfigMap it reads
SPEC_FIELDS = "elastream.io/spec-fields"  # on the driver pod: digest per spec.spark field, to say what changed
SPARK_UID = 185  # the user of the runner image (spark_apps/Dockerfile) and of apache/spark images
CONF_DIR = "/etc/elastream"
EXECUTOR_TEMPLATE = "executor-pod-template.yaml"
VOLUME = "data"  # the shared volume's name, in the driver pod and in Spark's executor volume conf
DRIVER_GRACE_S = 60  # SIGTERM → the runner stops the query and Spark deletes its executors
TOKEN_FILE = "/var/run/elastream/token"
MASTER = "k8s://https://kubernetes.default.svc"


def names(app: str) -> dict[str, str]:
    return {
        "driver": f"{app}-driver",
        "service": f"{app}-driver",
        "serviceAccount": f"{app}-spark",
        "role": f"{app}-spark",
        "roleBinding": f"{app}-spark",
        "secret": f"{app}-control",
        "configMap": f"{app}-config",
        "claim": f"{app}-data",
    }


def control_url(app: str, namespace: str) -> str:
    return f"http://{names(app)['service']}.{namespace}.svc:{CONTROL_PORT}"


def metrics_url(app: str, namespace: str) -> str:
    return f"http://{names(app)['service']}.{namespace}.svc:{METRICS_PORT}/metrics"


def claim_name(app: str, spec: StreamAppSpec) -> str:
    """The shared volume's claim: the user's, or the one the operator creates."""
    return spec.spark.storage.claim_name or names(app)["claim"]


def paths(app: str, spec: StreamAppSpec) -> dict[str, str]:
    """Checkpoint and sink: per app on the shared volume, unless the checkpoint is set elsewhere (e.g. s3a://)."""
    return {"checkpoint": spec.spark.checkpoint_location or f"{DATA_PATH}/{app}/checkpoint",
            "sink": f"{DATA_PATH}/{app}/sink"}


def _storage_conf(app: str, spec: StreamAppSpec) -> dict[str, str]:
    """The shared volume in the executors (Spark mounts it into every executor pod it creates)."""
    prefix = f"spark.kubernetes.executor.volumes.persistentVolumeClaim.{VOLUME}"
    return {f"{prefix}.options.claimName": claim_name(app, spec), f"{prefix}.mount.path": DATA_PATH,
            f"{prefix}.mount.readOnly": "false"}


def app_config(app: str, namespace: str, spec: StreamAppSpec) -> dict[str, Any]:
    """What the runner reads from the ConfigMap: the Spark section of the spec plus derived settings."""
    spark = spec.spark
    conf = {
        "spark.kubernetes.namespace": namespace,
        "spark.kubernetes.container.image": spark.image,
        "spark.kubernetes.container.image.pullPolicy": spark.image_pull_policy,
        "spark.kubernetes.driver.pod.name": names(app)["driver"],
        "spark.kubernetes.authenticate.driver.serviceAccountName": names(app)["serviceAccount"],
        "spark.kubernetes.executor.label." + LABEL_APP: app,
        "spark.kubernetes.executor.label." + LABEL_ROLE: "executor",
        "spark.kubernetes.executor.podTemplateFile": f"{CONF_DIR}/{EXECUTOR_TEMPLATE}",
        # client mode: Spark created no driver Service, so it has none to delete (and needs no right to)
        "spark.kubernetes.driver.service.deleteOnTermination": "false",
        "spark.driver.host": f"{names(app)['service']}.{namespace}.svc",
        # spark.driver.bindAddress is the pod IP (set in the driver's args): Spark >= 4.1 executors dial the bind
        # address (spark.kubernetes.executor.useDriverPodIP), so 0.0.0.0 fails every executor, and the Service
        # name may not resolve yet when the driver starts (UnresolvedAddressException, then a container restart)
        "spark.driver.port": str(DRIVER_PORT),
        "spark.driver.blockManager.port": str(BLOCK_MANAGER_PORT),
        "spark.driver.memory": spark.driver.memory,
        "spark.executor.cores": str(spark.executor.cores),
        "spark.executor.memory": spark.executor.memory,
        "spark.sql.shuffle.partitions": str(spark.max_parallelism),
        **_storage_conf(app, spec),
        **_pod_settings_conf(spark),
        **{f"spark.kubernetes.node.selector.{k}": v for k, v in spark.node_selector.items()},
        **(plugin_conf(app, spark, METRICS_PORT, CONTROL_PORT, TOKEN_FILE, bind_address="0.0.0.0")
           if spark.application.is_users else {}),
        **spark.conf,
    }
    return {
        "app": app,
        "master": MASTER,
        "executors": spark.executors.to_wire(),
        "application": spark.application.to_wire(),
        "source": spark.source.to_wire(),
        "checkpointLocation": paths(app, spec)["checkpoint"],
        "triggerInterval": spark.trigger_interval,
        "conf": conf,
    }


def _pod_settings_conf(spark) -> dict[str, str]:
    """What of spec.spark.driver/executor and imagePullSecrets Spark itself applies: the memory overheads, the
    executors' ServiceAccount and pull secrets (the rest goes in the executor pod template)."""
    conf = {f"spark.{role}.memoryOverhead": pod.memory_overhead
            for role, pod in (("driver", spark.driver), ("executor", spark.executor)) if pod.memory_overhead}
    if spark.executor.service_account:
        conf["spark.kubernetes.authenticate.executor.serviceAccountName"] = spark.executor.service_account
    if spark.image_pull_secrets:
        conf["spark.kubernetes.container.image.pullSecrets"] = ",".join(spark.image_pull_secrets)
    return conf


def _mounted_volumes(spark, pod) -> list[dict[str, Any]]:
    """The extra volumes one pod mounts, as the pod spec spells them."""
    used = {m.name for m in pod.volume_mounts}
    return [v.to_wire() for v in spark.volumes if v.name in used]


def _security_context() -> dict[str, Any]:
    """Driver and executors run as the same user, so what one writes on the shared volume the other can change;
    fsGroup makes the volume group-writable where the volume type supports it (hostPath and NFS do not)."""
    return {"runAsUser": SPARK_UID, "runAsGroup": SPARK_UID, "fsGroup": SPARK_UID,
            "fsGroupChangePolicy": "OnRootMismatch"}


def executor_pod_template(spec: StreamAppSpec) -> str:
    """Spark's executor pod template (read by the driver from the ConfigMap mount): what Spark conf cannot say.
    Spark keeps the template's labels, scheduling fields, volumes and its first container's env and mounts, and
    adds its own to them."""
    spark = spec.spark
    executor = spark.executor
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
                           "spec": {"securityContext": _security_context(), **executor.pod_spec_fields()}}
    meta = {k: v for k, v in (("labels", executor.labels), ("annotations", executor.annotations)) if v}
    if meta:
        pod["metadata"] = meta
    if volumes := _mounted_volumes(spark, executor):
        pod["spec"]["volumes"] = volumes
    if fields := executor.container_fields():
        pod["spec"]["containers"] = [{"name": "spark-kubernetes-executor", **fields}]  # Spark's own name for it
    return yaml.safe_dump(pod)


def config_map(body: dict[str, Any], spec: StreamAppSpec) -> dict[str, Any]:
    """app.json describes the app; spark-defaults.conf is read by Spark (SPARK_CONF_DIR points at the mount)."""
    app, ns = body["metadata"]["name"], body["metadata"]["namespace"]
    config = app_config(app, ns, spec)
    defaults = "".join(f"{k} {v}\n" for k, v in sorted(config["conf"].items()))
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": _meta(names(app)["configMap"], app, owner_reference(body), "config"),
            "data": {"app.json": json.dumps(config, indent=2, sort_keys=True), "spark-defaults.conf": defaults,
                     EXECUTOR_TEMPLATE: executor_pod_template(spec)}}


def secret(body: dict[str, Any], token: str) -> dict[str, Any]:
    app = body["metadata"]["name"]
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": _meta(names(app)["secret"], app, owner_reference(body), "control"),
            "stringData": {"token": token}}


def service_account(body: dict[str, Any]) -> dict[str, Any]:
    app = body["metadata"]["name"]
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": _meta(names(app)["serviceAccount"], app, owner_reference(body), "driver")}


# What Spark 4's Kubernetes backend does as the driver (fabric8 client): watches and lists its executor pods,
# creates them, labels them with their executor id (patch), deletes them one by one and by label selector
# (deletecollection: excess pending pods, and all of them on stop); creates the executors' config map and
# deletes it by label on stop; lists persistent volume claims for reuse before each allocation and deletes the
# ones it created by label on stop. The operator's own ClusterRole must hold each of these verbs to grant them.
DRIVER_RULES = [
    {"apiGroups": [""], "resources": ["pods"],
     "verbs": ["get", "list", "watch", "create", "patch", "delete", "deletecollection"]},
    {"apiGroups": [""], "resources": ["configmaps"],
     "verbs": ["get", "list", "watch", "create", "delete", "deletecollection"]},
    {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ["list", "deletecollection"]},
]


def role(body: dict[str, Any]) -> dict[str, Any]:
    """The driver may manage executor pods (and the config maps Spark mounts into them) — nothing else."""
    app = body["metadata"]["name"]
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": _meta(names(app)["role"], app, owner_reference(body), "driver"), "rules": DRIVER_RULES}


def role_binding(body: dict[str, Any]) -> dict[str, Any]:
    app, ns = body["metadata"]["name"], body["metadata"]["namespace"]
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": _meta(names(app)["roleBinding"], app, owner_reference(body), "driver"),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": names(app)["role"]},
        "subjects": [{"kind": "ServiceAccount", "name": names(app)["serviceAccount"], "namespace": ns}],
    }


def service(body: dict[str, Any]) -> dict[str, Any]:
    """Headless; executors dial the driver by this name while it is not Ready yet, hence publishNotReadyAddresses."""
    app = body["metadata"]["name"]
    ports = [("metrics", METRICS_PORT), ("control", CONTROL_PORT), ("ui", UI_PORT),
             ("driver", DRIVER_PORT), ("blockmanager", BLOCK_MANAGER_PORT)]
    return {
        "apiVersion": "v1", "kind": "Service",
        "metadata": _meta(names(app)["service"], app, owner_reference(body), "driver"),
        "spec": {"selector": {LABEL_APP: app, LABEL_ROLE: "driver"}, "clusterIP": "None",
                 "publishNotReadyAddresses": True,
                 "ports": [{"name": n, "port": p, "targetPort": p} for n, p in ports]},
    }


def persistent_volume_claim(body: dict[str, Any], spec: StreamAppSpec) -> dict[str, Any] | None:
    """The shared volume's claim when the user names none: ReadWriteMany, owned by the StreamApp."""
    storage = spec.spark.storage
    if storage.claim_name:
        return None
    app = body["metadata"]["name"]
    claim = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": storage.size}}}
    if storage.storage_class_name:
        claim["storageClassName"] = storage.storage_class_name
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": _meta(names(app)["claim"], app, owner_reference(body), "data"), "spec": claim}


def _driver_template(body: dict[str, Any], spec: StreamAppSpec) -> dict[str, Any]:
    app, ns = body["metadata"]["name"], body["metadata"]["namespace"]
    n, spark, where = names(app), spec.spark, paths(app, spec)
    # a recreated driver starts with the executors last asked for, not the initial count
    start = spec.replicas or spark.executors.initial
    if spark.application.is_users:
        command, args = ["spark-submit"], users_driver_args(app, spec, start)
    else:
        command = ["python3", "-m", "spark_apps.runner"]
        args = runner_args(app, spec, master=MASTER, checkpoint=where["checkpoint"], sink=where["sink"],
                           metrics_port=METRICS_PORT, control_port=CONTROL_PORT, token_file=TOKEN_FILE,
                           executors=start)
        args += ["--conf", "spark.driver.bindAddress=$(POD_IP)"]  # the kubelet expands $(POD_IP) from the env below
    driver = spark.driver
    pod_spec: dict[str, Any] = {
        "serviceAccountName": driver.service_account or n["serviceAccount"],
        "restartPolicy": "OnFailure",
        "terminationGracePeriodSeconds": DRIVER_GRACE_S,
        "securityContext": _security_context(),
        "containers": [{
            "name": "driver",
            "image": spark.image,
            "imagePullPolicy": spark.image_pull_policy,
            "command": command,
            "args": args,
            "env": [{"name": "SPARK_CONF_DIR", "value": CONF_DIR},
                    {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    *(e.to_wire() for e in driver.env)],
            **({"envFrom": [e.to_wire() for e in driver.env_from]} if driver.env_from else {}),
            "ports": [{"name": "metrics", "containerPort": METRICS_PORT},
                      {"name": "control", "containerPort": CONTROL_PORT},
                      {"name": "ui", "containerPort": UI_PORT}],
            "resources": {"requests": {"cpu": _driver_cpu_request(spark), "memory": _driver_memory_request(driver)}},
            "volumeMounts": [{"name": "config", "mountPath": CONF_DIR, "readOnly": True},
                             {"name": "token", "mountPath": "/var/run/elastream", "readOnly": True},
                             {"name": VOLUME, "mountPath": DATA_PATH},
                             *(m.to_wire() for m in driver.volume_mounts)],
            "readinessProbe": {"httpGet": {"path": "/healthz", "port": CONTROL_PORT}, "periodSeconds": 10},
            "terminationMessagePolicy": TERMINATION_MESSAGE_POLICY,
        }],
        "volumes": [{"name": "config", "configMap": {"name": n["configMap"]}},
                    {"name": "token", "secret": {"secretName": n["secret"]}},
                    {"name": VOLUME, "persistentVolumeClaim": {"claimName": claim_name(app, spec)}},
                    *_mounted_volumes(spark, driver)],
        **driver.pod_spec_fields(),
    }
    if spark.image_pull_secrets:
        pod_spec["imagePullSecrets"] = [{"name": name} for name in spark.image_pull_secrets]
    if spark.node_selector:
        pod_spec["nodeSelector"] = dict(spark.node_selector)
    if spark.storage.fix_permissions:
        pod_spec["initContainers"] = [_fix_permissions(app, spark.image, spark.image_pull_policy)]
    metadata = _meta(n["driver"], app, owner_reference(body), "driver")
    metadata["labels"] = {**driver.labels, **metadata["labels"]}  # the operator's own labels win (CEL refuses them)
    metadata["annotations"] = {**driver.annotations, "prometheus.io/scrape": "true",
                               "prometheus.io/port": str(METRICS_PORT), "prometheus.io/path": "/metrics"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec}


def users_driver_args(app: str, spec: StreamAppSpec, executors: int) -> list[str]:
    """spark-submit in the driver pod for a user's own application: client mode (the pod is the driver), the rest of
    the configuration from the ConfigMap's spark-defaults.conf; the main file as the image or the shared volume
    holds it (local:// is a path in the pod), or its URL, which spark-submit fetches; the arguments as they are
    (the kubelet expands $(VAR))."""
    application = spec.spark.application
    main = application.main_application_file
    jars = list(application.deps.jars) if application.deps else []
    return ["--master", MASTER, "--deploy-mode", "client", "--name", app,
            "--conf", "spark.driver.bindAddress=$(POD_IP)", "--conf", f"spark.executor.instances={executors}",
            *(["--jars", ",".join(jars)] if jars else []),
            *submit_args(application, main if application.main_is_url else main.removeprefix("local://"),
                         list(application.arguments))]


def _fix_permissions(app: str, image: str, pull_policy: str) -> dict[str, Any]:
    """hostPath and NFS volumes ignore fsGroup: make the app's directory the Spark user's, as root with only the
    capabilities that takes (opt-in: namespaces under the restricted Pod Security Standard refuse root)."""
    d, own = f"{DATA_PATH}/{app}", f"{SPARK_UID}:{SPARK_UID}"
    return {"name": "fix-permissions", "image": image, "imagePullPolicy": pull_policy,
            "command": ["sh", "-c", f"mkdir -p {d} && chown {own} {d} && chmod 0775 {d}"],
            "securityContext": {"runAsUser": 0, "runAsGroup": 0, "runAsNonRoot": False,
                                "capabilities": {"drop": ["ALL"], "add": ["CHOWN", "DAC_OVERRIDE", "FOWNER"]}},
            "volumeMounts": [{"name": VOLUME, "mountPath": DATA_PATH}]}


def driver_pod(body: dict[str, Any], spec: StreamAppSpec) -> dict[str, Any]:
    """The driver pod, annotated with the digests its replacement is decided on (elastream.engines.spark.driver)."""
    pod = _driver_template(body, spec)
    pod["metadata"]["annotations"].update({SPEC_HASH: spec_hash(body, spec),
                                           SPEC_FIELDS: json.dumps(field_digests(spec), sort_keys=True)})
    return pod


def spec_hash(body: dict[str, Any], spec: StreamAppSpec) -> str:
    """Digest of what the running driver was started from: its pod and the ConfigMap it read. spec.replicas is
    left out: a new executor count is realized in place through the control endpoint, never by a restart."""
    steady = spec.model_copy(update={"replicas": None})
    return _digest({"pod": _driver_template(body, steady), "config": config_map(body, steady)["data"]})


def field_digests(spec: StreamAppSpec) -> dict[str, str]:
    """A short digest per spec.spark field, so a restart can say which fields changed."""
    wire = spec.spark.model_dump(by_alias=True, mode="json", exclude={"attach"})
    return {f"spec.spark.{key}": _digest(value)[:10] for key, value in wire.items()}


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:32]


def _driver_memory_request(driver) -> str:
    """The driver pod's memory request: its heap, plus memoryOverhead when set (in client mode Spark sizes no
    driver pod, so the operator does; unset, the JVM's own overhead fits in the node's slack as before)."""
    if not driver.memory_overhead:
        return _k8s_memory(driver.memory)
    return f"{_mebibytes(driver.memory) + _mebibytes(driver.memory_overhead)}Mi"


def _mebibytes(spark_memory: str) -> int:
    """Spark's memory size in MiB, rounded up (no unit: MiB, as Spark reads spark.*.memory)."""
    text = spark_memory.lower()
    if text.endswith("b") and text[-2:-1].isalpha():  # "2gb" -> "2g"
        text = text[:-1]
    shift = {"b": -20, "k": -10, "m": 0, "g": 10, "t": 20, "p": 30}
    unit = text[-1] if text[-1] in shift else "m"
    number = int(text.rstrip("bkmgtp"))
    return number << shift[unit] if shift[unit] >= 0 else -(-number >> -shift[unit])


def _k8s_memory(spark_memory: str) -> str:
    """Spark's "1g"/"512m"/"2gb"/"100b" as a Kubernetes quantity ("1Gi"/"512Mi"/"2Gi"/"100"); no unit: MiB."""
    units = {"k": "Ki", "m": "Mi", "g": "Gi", "t": "Ti", "p": "Pi"}
    text = spark_memory.lower()
    if text.endswith("b") and text[-2:-1] in units:
        text = text[:-1]
    if text[-1:] in units:
        return text[:-1] + units[text[-1]]
    return text[:-1] if text.endswith("b") else text + "Mi"


def owned_objects(body: dict[str, Any], spec: StreamAppSpec, token: str) -> list[dict[str, Any]]:
    """Every object of a managed Spark app but the driver pod, in creation order (the pod mounts them)."""
    claim = persistent_volume_claim(body, spec)
    return [service_account(body), role(body), role_binding(body), secret(body, token),
            *([claim] if claim else []), config_map(body, spec), service(body)]


def _driver_cpu_request(spark) -> str:
    """The driver pod's CPU request: Spark's own spark.kubernetes.driver.request.cores when spec.spark.conf sets it
    (as spark-submit honors it for the driver pods it makes), else spec.spark.driver.cores."""
    return str(spark.conf.get("spark.kubernetes.driver.request.cores") or spark.driver.cores)
