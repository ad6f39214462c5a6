"""The Kubernetes objects of an operator-managed Storm StreamApp, as plain manifests (no API calls here).

A whole Storm cluster runs as pods in the app's namespace, from one image (storm_apps/Dockerfile):

- ZooKeeper: one pod (Storm's DevZookeeper; its data is an emptyDir), Service `<app>-zookeeper:2181`.
- Nimbus: one pod, Service `<app>-nimbus:6627` (the operator rebalances through it); its local dir (the topology
  jars and configurations it serves) is on the shared volume, so a replaced Nimbus pod keeps them. The Storm
  exporter runs beside it in the pod and serves /metrics on 9108 (prometheus.io annotations).
- Supervisors: a Deployment, `slotsPerSupervisor` worker slots per pod, each known to Storm by its pod IP
  (storm.local.hostname), so workers reach each other directly. Their number follows the workers
  (elastream.engines.storm.supervisors): added before a rebalance needs them, idle ones removed after.
- The submit Job: submits the built-in topology with tasks = maxParallelism once Nimbus answers.
- The shared volume (`spec.storm.storage`, like Spark's): the spout's replayable source state and the sink, written
  by the workers' Python tasks on any supervisor and read by the exporter (backlog).

Every object carries an owner reference to the StreamApp, so deleting it removes them all.
"""
from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import yaml

from elastream.api.streamapp import DATA_PATH, StreamAppSpec
from elastream.engines.owners import LABEL_APP, LABEL_ROLE, object_meta as _meta, owner_reference
from elastream.engines.pods import TERMINATION_MESSAGE_POLICY
from storm_apps.distribution import SCHEDULER_CLASS

ZOOKEEPER_PORT = 2181
NIMBUS_PORT = 6627
EXPORTER_PORT = 9108
FIRST_SLOT_PORT = 6700
STORM_UID = 185  # the user of the storm-runner image (storm_apps/Dockerfile), as in the spark-runner image
CONF_DIR = "/etc/elastream-storm"  # the ConfigMap: storm.yaml (shared) and submit.json
STATE_DIR = "/var/lib/storm"  # each daemon's own state, logs and generated configuration (an emptyDir)
VOLUME = "data"
SPEC_HASH = "elastream.io/spec-hash"  # on each pod template and the submit Job: digest of what it was made from
DAEMON_HEAP = "256m"
WORKER_HEAP = "256m"
# memory requests: a daemon JVM at -Xmx256m stays under ~270 MiB RSS; a worker slot is two JVMs (the worker and
# its log writer, ~275 MiB) plus its Python task processes (~10 MiB each) (shared/notes/storm-cluster.md)
DAEMON_MEMORY_MI = 320
SLOT_MEMORY_MI = 384
EXPORTER_MEMORY_MI = 96
CPU_REQUEST = "100m"
SUBMIT_TIMEOUT_S = 600  # the submit Job waits this long for Nimbus
SUPERVISOR_GRACE_S = 30


def names(app: str) -> dict[str, str]:
    return {
        "zookeeper": f"{app}-zookeeper",
        "nimbus": f"{app}-nimbus",
        "supervisor": f"{app}-supervisor",
        "configMap": f"{app}-storm",
        "submit": f"{app}-submit",
        "claim": f"{app}-data",
    }


def dns(app: str, namespace: str, what: str) -> str:
    return f"{names(app)[what]}.{namespace}.svc"


def claim_name(app: str, spec: StreamAppSpec) -> str:
    return spec.storm.storage.claim_name or names(app)["claim"]


def paths(app: str) -> dict[str, str]:
    """On the shared volume: the spout's source state (and the sink the verifier reads), and Nimbus' local dir."""
    return {"state": f"{DATA_PATH}/{app}/state", "nimbus": f"{DATA_PATH}/{app}/nimbus"}


def layout(app: str, spec: StreamAppSpec) -> tuple[dict[str, int], dict[str, int]]:
    """Initial executors and tasks (= max executors) per component; ManifestError names an unknown component."""
    from elastream.engines.storm.local import layout as topology_layout

    return topology_layout(app, spec)


def initial_workers(spec: StreamAppSpec, executors: dict[str, int]) -> int:
    from elastream.engines.storm.realizer import workers_for

    w = spec.storm.workers
    return workers_for(executors, spec.storm.executors_per_worker, w.min, w.max)


def supervisors_for(workers: int, slots: int) -> int:
    """Supervisor pods that hold `workers` workers (at least one, so a topology always has somewhere to run)."""
    return max(1, math.ceil(workers / slots))


def slot_ports(slots: int) -> list[int]:
    return list(range(FIRST_SLOT_PORT, FIRST_SLOT_PORT + slots))


def storm_conf(app: str, namespace: str, spec: StreamAppSpec) -> dict[str, Any]:
    """storm.yaml shared by every daemon and the submitter; each pod adds its own directories and hostname."""
    return {
        "storm.zookeeper.servers": [dns(app, namespace, "zookeeper")],
        "storm.zookeeper.port": ZOOKEEPER_PORT,
        "nimbus.seeds": [dns(app, namespace, "nimbus")],
        "nimbus.thrift.port": NIMBUS_PORT,
        "supervisor.slots.ports": slot_ports(spec.storm.slots_per_supervisor),
        # elastream's scheduler (in the image's extlib/): a topology conf plan places its executors
        # (spec.placement, elastream.engines.storm.placement); without one it is Storm's default scheduler
        "storm.scheduler": SCHEDULER_CLASS,
        "worker.childopts": f"-Xmx{WORKER_HEAP} -XX:+UseSerialGC",
        # stats every 10 s, counted exactly (the defaults: a minute old, and x20 estimates)
        "executor.metrics.frequency.secs": 10,
        "topology.builtin.metrics.bucket.size.secs": 10,
        "topology.stats.sample.rate": 1.0,
        "nimbus.monitor.freq.secs": 5,
        "supervisor.monitor.frequency.secs": 3,
    }


def submit_config(app: str, namespace: str, spec: StreamAppSpec) -> dict[str, Any]:
    """What the submit Job submits (storm_apps.pod submit): the topology at its initial layout, tasks = max."""
    storm = spec.storm
    executors, tasks = layout(app, spec)
    return {
        "name": storm.topology_name(app),
        "app": storm.application.builtin,
        "parallelism": executors,
        "maxParallelism": tasks,
        "workers": initial_workers(spec, executors),
        "generator": storm.application.generator_args(storm.source.generator.model_dump(mode="json")),
        "stateDir": paths(app)["state"],
        "durationS": None,  # a managed topology runs until the StreamApp is suspended or deleted
        "nimbusHost": dns(app, namespace, "nimbus"),
        "nimbusPort": NIMBUS_PORT,
    }


def config_map(body: dict[str, Any], spec: StreamAppSpec) -> dict[str, Any]:
    app, ns = body["metadata"]["name"], body["metadata"]["namespace"]
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": _meta(names(app)["configMap"], app, owner_reference(body), "config"),
            "data": {"storm.yaml": yaml.safe_dump(storm_conf(app, ns, spec), sort_keys=True),
                     "submit.json": json.dumps(submit_config(app, ns, spec), indent=2, sort_keys=True)}}


def persistent_volume_claim(body: dict[str, Any], spec: StreamAppSpec) -> dict[str, Any] | None:
    """The shared volume's claim when the user names none: ReadWriteMany, owned by the StreamApp."""
    storage = spec.storm.storage
    if storage.claim_name:
        return None
    app = body["metadata"]["name"]
    claim: dict[str, Any] = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": storage.size}}}
    if storage.storage_class_name:
        claim["storageClassName"] = storage.storage_class_name
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": _meta(names(app)["claim"], app, owner_reference(body), "data"), "spec": claim}


def service(body: dict[str, Any], role: str, ports: list[tuple[str, int]]) -> dict[str, Any]:
    """A Service in front of the one pod of `role`; publishNotReadyAddresses: Storm's daemons dial each other while
    they start (Nimbus reaches ZooKeeper before it is Ready itself)."""
    app = body["metadata"]["name"]
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": _meta(names(app)[role], app, owner_reference(body), role),
            "spec": {"selector": {LABEL_APP: app, LABEL_ROLE: role}, "publishNotReadyAddresses": True,
                     "ports": [{"name": n, "port": p, "targetPort": p} for n, p in ports]}}


def _security_context() -> dict[str, Any]:
    return {"runAsUser": STORM_UID, "runAsGroup": 0, "fsGroup": STORM_UID, "fsGroupChangePolicy": "OnRootMismatch"}


def _container(spec: StreamAppSpec, name: str, args: list[str], memory_mi: int, *, env=None, ports=None,
               mounts=None, probe=None) -> dict[str, Any]:
    c: dict[str, Any] = {
        "name": name, "image": spec.storm.image, "imagePullPolicy": spec.storm.image_pull_policy, "args": args,
        "terminationMessagePolicy": TERMINATION_MESSAGE_POLICY,
        "env": [{"name": "STORM_CONF_DIR", "value": CONF_DIR}, {"name": "STORM_STATE_DIR", "value": STATE_DIR},
                *(env or [])],
        "resources": {"requests": {"cpu": CPU_REQUEST, "memory": f"{memory_mi}Mi"}},
        "volumeMounts": [{"name": "config", "mountPath": CONF_DIR, "readOnly": True},
                         {"name": "state", "mountPath": STATE_DIR}, *(mounts or [])],
    }
    if ports:
        c["ports"] = [{"name": n, "containerPort": p} for n, p in ports]
    if probe:
        c["readinessProbe"] = probe
    return c


def _tcp_probe(port: int) -> dict[str, Any]:
    return {"tcpSocket": {"port": port}, "periodSeconds": 5, "failureThreshold": 3}


def _data_mount() -> dict[str, Any]:
    return {"name": VOLUME, "mountPath": DATA_PATH}


def _pod_spec(app: str, spec: StreamAppSpec, containers: list[dict[str, Any]], *, data: bool,
              restart: str = "Always") -> dict[str, Any]:
    n = names(app)
    volumes: list[dict[str, Any]] = [{"name": "config", "configMap": {"name": n["configMap"]}},
                                     {"name": "state", "emptyDir": {}}]
    pod: dict[str, Any] = {"restartPolicy": restart, "securityContext": _security_context(),
                           "containers": containers, "volumes": volumes}
    if data:
        volumes.append({"name": VOLUME, "persistentVolumeClaim": {"claimName": claim_name(app, spec)}})
        if spec.storm.storage.fix_permissions:
            pod["initContainers"] = [_fix_permissions(app, spec)]
    return pod


def _fix_permissions(app: str, spec: StreamAppSpec) -> dict[str, Any]:
    """hostPath and NFS volumes ignore fsGroup: make the app's directory the Storm user's (as Spark's does)."""
    d, own = f"{DATA_PATH}/{app}", f"{STORM_UID}:0"
    return {"name": "fix-permissions", "image": spec.storm.image, "imagePullPolicy": spec.storm.image_pull_policy,
            "command": ["sh", "-c", f"mkdir -p {d} && chown {own} {d} && chmod 0775 {d}"],
            "securityContext": {"runAsUser": 0, "runAsGroup": 0, "runAsNonRoot": False,
                                "capabilities": {"drop": ["ALL"], "add": ["CHOWN", "DAC_OVERRIDE", "FOWNER"]}},
            "volumeMounts": [_data_mount()]}


def _labels(app: str, role: str) -> dict[str, str]:
    return {LABEL_APP: app, LABEL_ROLE: role, "app.kubernetes.io/managed-by": "elastream"}


def _deployment(body: dict[str, Any], spec: StreamAppSpec, role: str, pod_spec: dict[str, Any], replicas: int,
                annotations: dict[str, str] | None = None, strategy: str = "Recreate") -> dict[str, Any]:
    app = body["metadata"]["name"]
    template = {"metadata": {"labels": _labels(app, role), "annotations": dict(annotations or {})}, "spec": pod_spec}
    template["metadata"]["annotations"][SPEC_HASH] = digest({"template": template, "config": _config_digest(body, spec)})
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": _meta(names(app)[role], app, owner_reference(body), role),
            "spec": {"replicas": replicas, "selector": {"matchLabels": {LABEL_APP: app, LABEL_ROLE: role}},
                     "strategy": {"type": strategy}, "template": template}}


def _config_digest(body: dict[str, Any], spec: StreamAppSpec) -> str:
    """The daemons read storm.yaml at start: a new one rolls their pods (submit.json is the Job's, not theirs)."""
    return digest(config_map(body, spec)["data"]["storm.yaml"])


def zookeeper(body: dict[str, Any], spec: StreamAppSpec) -> dict[str, Any]:
    app = body["metadata"]["name"]
    c = _container(spec, "zookeeper", ["python3", "-m", "storm_apps.pod", "zookeeper"], DAEMON_MEMORY_MI,
                   ports=[("zookeeper", ZOOKEEPER_PORT)], probe=_tcp_probe(ZOOKEEPER_PORT))
    return _deployment(body, spec, "zookeeper", _pod_spec(app, spec, [c], data=False), 1)


def nimbus(body: dict[str, Any], spec: StreamAppSpec) -> dict[str, Any]:
    """Nimbus and, beside it, the Storm exporter (it reads Nimbus' statistics and the source state's backlog)."""
    app, ns = body["metadata"]["name"], body["metadata"]["namespace"]
    where = paths(app)
    daemon = _container(
        spec, "nimbus", ["python3", "-m", "storm_apps.pod", "nimbus", "--local-dir", where["nimbus"]],
        DAEMON_MEMORY_MI, env=[{"name": "STORM_HOSTNAME", "value": dns(app, ns, "nimbus")}],
        ports=[("thrift", NIMBUS_PORT)], mounts=[_data_mount()], probe=_tcp_probe(NIMBUS_PORT))
    exporter = _container(
        spec, "exporter", ["elastream", "storm-exporter", "--nimbus", f"127.0.0.1:{NIMBUS_PORT}",
                           "--topology", spec.storm.topology_name(app), "--app", app,
                           "--listen", f"0.0.0.0:{EXPORTER_PORT}", "--source-state", where["state"]],
        EXPORTER_MEMORY_MI, ports=[("metrics", EXPORTER_PORT)], mounts=[_data_mount()])
    annotations = {"prometheus.io/scrape": "true", "prometheus.io/port": str(EXPORTER_PORT),
                   "prometheus.io/path": "/metrics"}
    return _deployment(body, spec, "nimbus", _pod_spec(app, spec, [daemon, exporter], data=True), 1, annotations)


def supervisors(body: dict[str, Any], spec: StreamAppSpec, replicas: int) -> dict[str, Any]:
    """The supervisor pods, spread over the nodes; each is known to Storm by its pod IP."""
    app = body["metadata"]["name"]
    slots = spec.storm.slots_per_supervisor
    c = _container(spec, "supervisor", ["python3", "-m", "storm_apps.pod", "supervisor"],
                   DAEMON_MEMORY_MI + slots * SLOT_MEMORY_MI,
                   env=[{"name": "STORM_HOSTNAME", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                   ports=[(f"slot-{i}", p) for i, p in enumerate(slot_ports(slots))], mounts=[_data_mount()])
    pod = _pod_spec(app, spec, [c], data=True)
    pod["terminationGracePeriodSeconds"] = SUPERVISOR_GRACE_S
    pod["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                         "whenUnsatisfiable": "ScheduleAnyway",
                                         "labelSelector": {"matchLabels": {LABEL_APP: app, LABEL_ROLE: "supervisor"}}}]
    return _deployment(body, spec, "supervisor", pod, replicas, strategy="RollingUpdate")


def submit_job(body: dict[str, Any], spec: StreamAppSpec) -> dict[str, Any]:
    """Submits the topology once Nimbus answers (does nothing if it already runs); the hash of what it submits is
    on the Job, so a changed topology spec is seen (the old topology is killed, the Job made again)."""
    app, ns = body["metadata"]["name"], body["metadata"]["namespace"]
    c = _container(spec, "submit", ["python3", "-m", "storm_apps.pod", "submit", "--timeout", str(SUBMIT_TIMEOUT_S)],
                   DAEMON_MEMORY_MI, mounts=[_data_mount()])
    pod = _pod_spec(app, spec, [c], data=True, restart="OnFailure")
    metadata = _meta(names(app)["submit"], app, owner_reference(body), "submit")
    metadata["annotations"] = {SPEC_HASH: submit_hash(app, ns, spec)}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata,
            "spec": {"backoffLimit": 4, "template": {"metadata": {"labels": _labels(app, "submit")}, "spec": pod}}}


def submit_hash(app: str, namespace: str, spec: StreamAppSpec) -> str:
    return digest({"submit": submit_config(app, namespace, spec), "image": spec.storm.image})


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:32]


def owned_objects(body: dict[str, Any], spec: StreamAppSpec) -> list[dict[str, Any]]:
    """The objects that do not come and go, in creation order: the claim and ConfigMap the pods mount, the Services
    they dial, ZooKeeper and Nimbus. (The supervisors and the submit Job are created by the reconcile pass: their
    number and their life follow the topology.)"""
    claim = persistent_volume_claim(body, spec)
    return [*([claim] if claim else []), config_map(body, spec),
            service(body, "zookeeper", [("zookeeper", ZOOKEEPER_PORT)]),
            service(body, "nimbus", [("thrift", NIMBUS_PORT), ("metrics", EXPORTER_PORT)]),
            zookeeper(body, spec), nimbus(body, spec)]
