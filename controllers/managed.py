"""The Kubernetes objects of an operator-managed Spark StreamApp, as plain manifests.

The driver runs the spark_apps runner with a `k8s://` master; Spark creates the executors as pods owned by
the driver pod. The driver's ServiceAccount may manage pods and their config maps in its namespace, nothing else.
Every object carries an owner reference to the StreamApp, so deleting the StreamApp removes them all.
"""
from __future__ import annotations

import json
from typing import Any

from elastream.api.streamapp import StreamAppSpec
from elastream.runner_args import runner_args

METRICS_PORT = 9108
CONTROL_PORT = 9109
UI_PORT = 4040
DRIVER_PORT = 7078
BLOCK_MANAGER_PORT = 7079
LABEL_APP = "elastream.io/app"
LABEL_ROLE = "elastream.io/role"


def names(app: str) -> dict[str, str]:
    return {
        "driver": f"{app}-driver",
        "service": f"{app}-driver",
        "serviceAccount": f"{app}-spark",
        "role": f"{app}-spark",
        "roleBinding": f"{app}-spark",
        "secret": f"{app}-control",
        "configMap": f"{app}-config",
    }


def selector(app: str) -> str:
    """Label selector of the app's pods (driver and executors), for the scale subresource."""
    return f"{LABEL_APP}={app}"


def owner_reference(body: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": body["apiVersion"],
        "kind": body["kind"],
        "name": body["metadata"]["name"],
        "uid": body["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _meta(name: str, app: str, owner: dict[str, Any], role: str) -> dict[str, Any]:
    return {"name": name, "labels": {LABEL_APP: app, LABEL_ROLE: role, "app.kubernetes.io/managed-by": "elastream"},
            "ownerReferences": [owner]}


def control_url(app: str, namespace: str) -> str:
    return f"http://{names(app)['service']}.{namespace}.svc:{CONTROL_PORT}"


def metrics_url(app: str, namespace: str) -> str:
    return f"http://{names(app)['service']}.{namespace}.svc:{METRICS_PORT}/metrics"


def app_config(app: str, namespace: str, spec: StreamAppSpec) -> dict[str, Any]:
    """What the runner reads from the ConfigMap: the Spark section of the spec plus derived settings."""
    spark = spec.spark
    conf = {
        "spark.kubernetes.namespace": namespace,
        "spark.kubernetes.container.image": spark.image,
        "spark.kubernetes.driver.pod.name": names(app)["driver"],
        "spark.kubernetes.authenticate.driver.serviceAccountName": names(app)["serviceAccount"],
        "spark.kubernetes.executor.label." + LABEL_APP: app,
        "spark.kubernetes.executor.label." + LABEL_ROLE: "executor",
        "spark.driver.host": f"{names(app)['service']}.{namespace}.svc",
        "spark.driver.port": str(DRIVER_PORT),
        "spark.driver.blockManager.port": str(BLOCK_MANAGER_PORT),
        "spark.executor.cores": str(spark.executor.cores),
        "spark.executor.memory": spark.executor.memory,
        "spark.sql.shuffle.partitions": str(spark.max_parallelism),
        **spark.conf,
    }
    return {
        "app": app,
        "master": "k8s://https://kubernetes.default.svc",
        "executors": spark.executors.to_wire(),
        "application": spark.application.to_wire(),
        "source": spark.source.to_wire(),
        "checkpointLocation": spark.checkpoint_location or f"/var/lib/elastream/{app}/checkpoint",
        "triggerInterval": spark.trigger_interval,
        "conf": conf,
    }


def config_map(body: dict[str, Any], spec: StreamAppSpec) -> dict[str, Any]:
    """app.json describes the app; spark-defaults.conf is read by Spark (SPARK_CONF_DIR points at the mount)."""
    app, ns = body["metadata"]["name"], body["metadata"]["namespace"]
    config = app_config(app, ns, spec)
    defaults = "".join(f"{k} {v}\n" for k, v in sorted(config["conf"].items()))
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": _meta(names(app)["configMap"], app, owner_reference(body), "config"),
            "data": {"app.json": json.dumps(config, indent=2, sort_keys=True), "spark-defaults.conf": defaults}}


def secret(body: dict[str, Any], token: str) -> dict[str, Any]:
    app = body["metadata"]["name"]
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": _meta(names(app)["secret"], app, owner_reference(body), "control"),
            "stringData": {"token": token}}


def service_account(body: dict[str, Any]) -> dict[str, Any]:
    app = body["metadata"]["name"]
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": _meta(names(app)["serviceAccount"], app, owner_reference(body), "driver")}


def role(body: dict[str, Any]) -> dict[str, Any]:
    """The driver may manage executor pods (and the config maps Spark mounts into them) — nothing else."""
    app = body["metadata"]["name"]
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": _meta(names(app)["role"], app, owner_reference(body), "driver"),
        "rules": [
            {"apiGroups": [""], "resources": ["pods"],
             "verbs": ["get", "list", "watch", "create", "delete", "deletecollection", "patch"]},
            {"apiGroups": [""], "resources": ["configmaps"],
             "verbs": ["get", "list", "watch", "create", "delete", "deletecollection"]},
        ],
    }


def role_binding(body: dict[str, Any]) -> dict[str, Any]:
    app, ns = body["metadata"]["name"], body["metadata"]["namespace"]
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": _meta(names(app)["roleBinding"], app, owner_reference(body), "driver"),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": names(app)["role"]},
        "subjects": [{"kind": "ServiceAccount", "name": names(app)["serviceAccount"], "namespace": ns}],
    }


def service(body: dict[str, Any]) -> dict[str, Any]:
    app = body["metadata"]["name"]
    ports = [("metrics", METRICS_PORT), ("control", CONTROL_PORT), ("ui", UI_PORT),
             ("driver", DRIVER_PORT), ("blockmanager", BLOCK_MANAGER_PORT)]
    return {
        "apiVersion": "v1", "kind": "Service",
        "metadata": _meta(names(app)["service"], app, owner_reference(body), "driver"),
        "spec": {"selector": {LABEL_APP: app, LABEL_ROLE: "driver"}, "clusterIP": "None",
                 "ports": [{"name": n, "port": p, "targetPort": p} for n, p in ports]},
    }


def driver_pod(body: dict[str, Any], spec: StreamAppSpec) -> dict[str, Any]:
    app, ns = body["metadata"]["name"], body["metadata"]["namespace"]
    n, spark, config = names(app), spec.spark, app_config(app, ns, spec)
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": _meta(n["driver"], app, owner_reference(body), "driver"),
        "spec": {
            "serviceAccountName": n["serviceAccount"],
            "restartPolicy": "OnFailure",
            "containers": [{
                "name": "driver",
                "image": spark.image,
                "command": ["python3", "-m", "spark_apps.runner"],
                "args": runner_args(app, spec, master=config["master"], checkpoint=config["checkpointLocation"],
                                    sink=f"/var/lib/elastream/{app}/sink", metrics_port=METRICS_PORT,
                                    control_port=CONTROL_PORT, token_file="/var/run/elastream/token"),
                "env": [{"name": "SPARK_CONF_DIR", "value": "/etc/elastream"}],
                "ports": [{"name": "metrics", "containerPort": METRICS_PORT},
                          {"name": "control", "containerPort": CONTROL_PORT},
                          {"name": "ui", "containerPort": UI_PORT}],
                "resources": {"requests": {"cpu": str(spark.driver.cores), "memory": _k8s_memory(spark.driver.memory)}},
                "volumeMounts": [{"name": "config", "mountPath": "/etc/elastream", "readOnly": True},
                                 {"name": "token", "mountPath": "/var/run/elastream", "readOnly": True},
                                 {"name": "data", "mountPath": "/var/lib/elastream"}],
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": CONTROL_PORT}, "periodSeconds": 10},
            }],
            # the default checkpoint lives in an emptyDir (lost with the pod): set spark.checkpointLocation
            # to durable storage (a PVC path or s3a://) for exactly-once across driver pod restarts
            "volumes": [{"name": "config", "configMap": {"name": n["configMap"]}},
                        {"name": "token", "secret": {"secretName": n["secret"]}},
                        {"name": "data", "emptyDir": {}}],
        },
    }


def _k8s_memory(spark_memory: str) -> str:
    """Spark's "1g"/"512m" as a Kubernetes quantity ("1Gi"/"512Mi"); Kubernetes quantities pass through."""
    units = {"k": "Ki", "m": "Mi", "g": "Gi", "t": "Ti"}
    text = spark_memory.rstrip("bB")
    if text and text[-1] in units:
        return text[:-1] + units[text[-1]]
    return text


def children(body: dict[str, Any], spec: StreamAppSpec, token: str) -> list[dict[str, Any]]:
    """Every object of a managed Spark app, in creation order (the pod last: it mounts the others)."""
    return [service_account(body), role(body), role_binding(body), secret(body, token),
            config_map(body, spec), service(body), driver_pod(body, spec)]
