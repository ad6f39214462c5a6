"""A one-node Kafka broker as a pod of a Kubernetes cluster, from the same cached distribution LocalKafka runs, and
a Service in front of it: the broker the end-to-end tests' managed StreamApps read from.

The pod runs any image with a Java 17 runtime and a POSIX shell (the Spark runner's) and reads Kafka's jars from
a hostPath directory (`publish` copies the distribution there, readable by any user): the test cluster's nodes
share the host's filesystem, and no registry is needed. A bare Pod, not a Deployment: a replacement would have
an empty log and a new address, and a consumer's checkpointed offsets would then point nowhere; the checkpoint's
reader says so (auto.offset.reset=error) rather than skip records.

The broker advertises its pod IP: every pod can reach it, and so can the test cluster's host (whose resolver does
not know Service names). Clients may bootstrap through the Service, `<name>.<namespace>.svc:9092`.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from kafka_broker.broker import BROKER, STORAGE_TOOL, cluster_id, server_properties
from kafka_broker.distribution import kafka_home

PORT, CONTROLLER_PORT = 9092, 9093
HOME, DATA, CONF = "/opt/kafka", "/var/lib/kafka", "/etc/kafka"
POD_IP = "@POD_IP@"  # replaced by the pod's address when it starts


def publish(host_dir: Path | str) -> Path:
    """The cached distribution, copied to `host_dir`/<its name> with read access for all (the cache lives under a
    home directory only its owner can enter). A copy already there is kept."""
    home = kafka_home()
    target = Path(host_dir) / home.name
    if not (target / ".complete").exists():
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(home, target)
        for path in [target, *target.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
    Path(host_dir).chmod(0o755)
    return target


def start_script(heap: str) -> str:
    """Format the log directory with the pod's own cluster id (once), then run the broker in the foreground."""
    java = f'java -Xmx{heap} -XX:+UseSerialGC -Dkafka.logs.dir={DATA}/logs ' \
           f'-Dlog4j2.configurationFile={HOME}/log4j2.xml -cp "{HOME}/lib/*"'
    return "\n".join([
        "set -e",
        f'sed "s/{POD_IP}/$POD_IP/" {CONF}/server.properties > {DATA}/server.properties',
        f'{java} {STORAGE_TOOL} format -t "$CLUSTER_ID" -c {DATA}/server.properties --ignore-formatted',
        f"exec {java} {BROKER} {DATA}/server.properties",
    ])


def broker_objects(name: str, namespace: str, image: str, host_home: Path | str,
                   node_selector: dict[str, str] | None = None, heap: str = "512m") -> list[dict]:
    """The ConfigMap, Pod and Service of a broker named `name`; host_home is a directory `publish` returned."""
    labels = {"app.kubernetes.io/name": "kafka", "app.kubernetes.io/instance": name}
    meta = {"name": name, "namespace": namespace, "labels": labels}
    properties = server_properties(listen_host="0.0.0.0", advertised_host=POD_IP, port=PORT,
                                   controller_port=CONTROLLER_PORT, data_dir=f"{DATA}/data")
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
              "data": {"server.properties": properties, "start.sh": start_script(heap)}}
    container = {
        "name": "kafka", "image": image, "imagePullPolicy": "IfNotPresent",
        "command": ["sh", f"{CONF}/start.sh"],
        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                {"name": "CLUSTER_ID", "value": cluster_id()}],
        "ports": [{"name": "kafka", "containerPort": PORT}],
        "readinessProbe": {"tcpSocket": {"port": PORT}, "periodSeconds": 2},
        "resources": {"requests": {"cpu": "100m", "memory": "768Mi"}, "limits": {"memory": "1Gi"}},
        "volumeMounts": [{"name": "home", "mountPath": HOME, "readOnly": True},
                         {"name": "conf", "mountPath": CONF}, {"name": "data", "mountPath": DATA}],
    }
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {
        "containers": [container], "nodeSelector": node_selector or {}, "restartPolicy": "Never",
        "volumes": [{"name": "home", "hostPath": {"path": str(host_home), "type": "Directory"}},
                    {"name": "conf", "configMap": {"name": name}}, {"name": "data", "emptyDir": {}}]}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": {
        "selector": labels, "ports": [{"name": "kafka", "port": PORT, "targetPort": PORT}]}}
    return [config, pod, service]
