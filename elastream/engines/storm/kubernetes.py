"""A Storm app's reconcile pass.

Attached (spec.storm.attach): nothing to create, Progressing says which Nimbus.

Managed: the app's own Storm cluster as pods (elastream.engines.storm.managed). Each pass creates what is missing
(claim, ConfigMap, Services, ZooKeeper, Nimbus, supervisors, the submit Job), brings the pod templates to the spec,
and says in Progressing how far the cluster is: ClusterStarting (ZooKeeper or Nimbus not ready yet: which, and
why when Kubernetes says so), TopologySubmitting, TopologySubmitted, or SubmitFailed. Ready comes from the
evaluation, once the topology's metrics are read. Suspended: the topology is killed, the submit Job deleted and
the supervisors scaled to 0 (ZooKeeper and Nimbus stay); resuming submits the topology again. A changed topology
spec (application, source, parallelism, maxParallelism, workers, topology name) kills the running topology and
submits the new one. The supervisors' number is the realizer's (elastream.engines.storm.supervisors) once they
exist: a pass never changes it, except to 0 while suspended and back when resumed.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

import kubernetes
from kubernetes.client.rest import ApiException
from kubernetes.utils import FailToCreateError

from controllers import kube
from controllers.conditions import get_condition, set_condition
from controllers.status import failed_status, invalid_status, progressing_status, suspended_status
from elastream.api.manifests import ManifestError
from elastream.api.streamapp import StreamAppSpec
from elastream.engines.base import Reconciled, ReconcileFailed
from elastream.engines.owners import LABEL_APP, LABEL_ROLE
from elastream.engines.pods import why_not_running
from elastream.engines.spark.kubernetes import attached
from elastream.engines.storm import managed

log = logging.getLogger(__name__)


def reconcile(body: dict[str, Any], spec: StreamAppSpec, *, all_objects: bool) -> Reconciled:
    generation = body["metadata"].get("generation", 0)
    attach = spec.storm.attach
    if attach is not None:
        return attached(spec, f"nimbus {attach.nimbus_host}:{attach.nimbus_port}, topology "
                        f"{spec.storm.topology_name(body['metadata']['name'])}", generation)
    try:
        managed.layout(body["metadata"]["name"], spec)
    except ManifestError as err:
        message = "; ".join(err.problems)
        return Reconciled([message], lambda st: invalid_status(st, message, generation))
    try:
        step = ManagedCluster(body, spec).reconcile(all_objects)
    except (ApiException, FailToCreateError) as err:  # e.g. RBAC: say so in status, then let the caller retry
        message = kube.api_error_message(err)
        raise ReconcileFailed(message, lambda st: failed_status(st, message, generation)) from err
    return Reconciled(step.said, lambda st: step.status(st, generation), step.events)


@dataclass
class Step:
    """What one pass did and found: words, events, and the Progressing reason and message it leads to."""

    said: list[str] = field(default_factory=list)
    events: list[tuple[str, str]] = field(default_factory=list)
    reason: str = ""
    message: str = ""
    suspended: bool = False
    failed: bool = False

    def status(self, old: dict[str, Any], generation: int) -> dict[str, Any]:
        if self.suspended:
            return suspended_status(old, self.message, generation)
        if self.failed:  # not retried by itself: the Job's pods failed backoffLimit times
            conds = set_condition(old.get("conditions") or [], "Progressing", False, self.reason, self.message,
                                  generation)
            return {**old, "conditions": conds, "phase": "Failed"}
        return progressing_status(old, self.reason, self.message, generation)


def apps() -> kubernetes.client.AppsV1Api:
    return kubernetes.client.AppsV1Api(kube.api_client())


def batch() -> kubernetes.client.BatchV1Api:
    return kubernetes.client.BatchV1Api(kube.api_client())


def _read(call, *args) -> dict[str, Any] | None:
    """An object as plain JSON (camelCase, as in a manifest), or None."""
    try:
        return json.loads(call(*args, _preload_content=False).data)
    except ApiException as err:
        if err.status == 404:
            return None
        raise


class ManagedCluster:
    def __init__(self, body: dict[str, Any], spec: StreamAppSpec):
        self.body, self.spec = body, spec
        self.app, self.namespace = body["metadata"]["name"], body["metadata"]["namespace"]
        self.names = managed.names(self.app)
        self.previous = get_condition((body.get("status") or {}).get("conditions") or [], "Progressing") or {}

    def reconcile(self, all_objects: bool) -> Step:
        step = Step()
        if all_objects:
            self._ensure_objects(step)
        supervisors = self._ensure_supervisors(step)
        job = self._ensure_submit_job(step)
        self._progress(step, supervisors, job)
        return step

    # -- objects that stay ------------------------------------------------------------------------------------

    def _ensure_objects(self, step: Step) -> None:
        for manifest in managed.owned_objects(self.body, self.spec):
            what = f"{manifest['kind']}/{manifest['metadata']['name']}"
            created = kube.create_if_absent(manifest, self.namespace)
            if created:
                step.said.append(f"created {what}")
                if manifest["kind"] == "Deployment" and manifest["metadata"]["name"] == self.names["nimbus"]:
                    step.events.append(("StormClusterCreated", "created ZooKeeper and Nimbus; the supervisors and "
                                        "the topology follow"))
            elif manifest["kind"] == "ConfigMap" and kube.sync_config_map(manifest, self.namespace):
                step.said.append(f"updated {what}")
            elif manifest["kind"] == "Deployment" and self._sync_template(manifest):
                step.said.append(f"updated the pod template of {what}")

    def _sync_template(self, wanted: dict[str, Any], current: dict[str, Any] | None = None) -> bool:
        """Make an existing Deployment's pod template the wanted one (a new spec or operator version); its
        replicas are left as they are."""
        name = wanted["metadata"]["name"]
        current = current or _read(apps().read_namespaced_deployment, name, self.namespace)
        if current is None:
            return False
        have = ((current["spec"]["template"].get("metadata") or {}).get("annotations") or {}).get(managed.SPEC_HASH)
        if have == wanted["spec"]["template"]["metadata"]["annotations"][managed.SPEC_HASH]:
            return False
        apps().patch_namespaced_deployment(name, self.namespace, [
            {"op": "replace", "path": "/spec/template", "value": wanted["spec"]["template"]}])
        return True

    # -- supervisors --------------------------------------------------------------------------------------------

    def initial_supervisors(self) -> int:
        executors, _ = managed.layout(self.app, self.spec)
        return managed.supervisors_for(managed.initial_workers(self.spec, executors),
                                       self.spec.storm.slots_per_supervisor)

    def _ensure_supervisors(self, step: Step) -> dict[str, Any] | None:
        name = self.names["supervisor"]
        current = _read(apps().read_namespaced_deployment, name, self.namespace)
        want = 0 if self.spec.suspend else self.initial_supervisors()
        if current is None:
            wanted = managed.supervisors(self.body, self.spec, want)
            kube.create_if_absent(wanted, self.namespace)
            step.said.append(f"created Deployment/{name} with {want} supervisors")
            return wanted
        replicas = current["spec"].get("replicas", 0)
        if self.spec.suspend and replicas:
            self._scale(name, 0)
            step.said.append("scaled the supervisors to 0 (suspended)")
        elif not self.spec.suspend and replicas == 0:
            self._scale(name, want)
            step.said.append(f"scaled the supervisors to {want}")
        else:
            if self._sync_template(managed.supervisors(self.body, self.spec, replicas), current):
                step.said.append(f"updated the pod template of Deployment/{name}")
        return current

    def _scale(self, name: str, replicas: int) -> None:
        apps().patch_namespaced_deployment_scale(name, self.namespace, {"spec": {"replicas": replicas}})

    # -- the topology -------------------------------------------------------------------------------------------

    def _ensure_submit_job(self, step: Step) -> dict[str, Any] | None:
        name = self.names["submit"]
        job = _read(batch().read_namespaced_job, name, self.namespace)
        if job is not None and job["metadata"].get("deletionTimestamp"):
            return None
        if self.spec.suspend:
            if job is not None:
                self._kill_topology(step, "spec.suspend is true")
                self._delete_job(name)
                step.said.append(f"deleted Job/{name}")
                step.events.append(("TopologyKilled", "spec.suspend is true: killed the topology, scaling the "
                                    "supervisors to 0"))
            return None
        wanted = managed.submit_job(self.body, self.spec)
        if job is None:
            kube.create_if_absent(wanted, self.namespace)
            step.said.append(f"created Job/{name}")
            return wanted
        have = (job["metadata"].get("annotations") or {}).get(managed.SPEC_HASH)
        if have != wanted["metadata"]["annotations"][managed.SPEC_HASH]:
            self._kill_topology(step, "the topology's spec changed")
            self._delete_job(name)
            step.said.append(f"deleted Job/{name}: the topology's spec changed")
            step.events.append(("Resubmitting", "the topology's spec changed: killed the running topology, "
                                "submitting the new one"))
            return None
        return job

    def _kill_topology(self, step: Step, why: str) -> None:
        from storm_apps.nimbus import NimbusClient, NimbusUnavailable

        from elastream.engines.storm.operator import nimbus_address

        host, port = nimbus_address(self.namespace, self.app, self.spec)
        topology = self.spec.storm.topology_name(self.app)
        try:
            NimbusClient(host, port, timeout_s=10).kill(topology, wait_s=0)
            step.said.append(f"killed topology {topology} ({why})")
        except (NimbusUnavailable, LookupError) as err:  # not running, or Nimbus down: nothing to kill
            log.info("could not kill topology %s of %s/%s: %s", topology, self.namespace, self.app, err)

    def _delete_job(self, name: str) -> None:
        try:
            batch().delete_namespaced_job(name, self.namespace, propagation_policy="Background")
        except ApiException as err:
            if err.status != 404:
                raise

    # -- status -------------------------------------------------------------------------------------------------

    def _progress(self, step: Step, supervisors: dict[str, Any] | None, job: dict[str, Any] | None) -> None:
        if self.spec.suspend:
            step.suspended = True
            step.message = ("spec.suspend is true: the topology is killed and the supervisors are scaled to 0 "
                            "(ZooKeeper, Nimbus and the volume are kept)")
            return
        pods = self._pods()
        waiting = [w for w in (self._role_waiting(pods, "zookeeper"), self._role_waiting(pods, "nimbus")) if w]
        if waiting:
            step.reason, step.message = "ClusterStarting", "; ".join(waiting)
            return
        conditions = {c["type"]: c for c in ((job or {}).get("status") or {}).get("conditions") or []}
        topology = self.spec.storm.topology_name(self.app)
        ready = len([p for p in pods.get("supervisor", []) if _ready(p)])
        want = (supervisors or {}).get("spec", {}).get("replicas", 0)
        if conditions.get("Failed", {}).get("status") == "True":
            step.failed = True
            step.reason = "SubmitFailed"
            step.message = (f"the submit Job {self.names['submit']} failed ({conditions['Failed'].get('message')}): "
                            f"see `kubectl logs job/{self.names['submit']}`")
            return
        if conditions.get("Complete", {}).get("status") == "True":
            step.reason = "TopologySubmitted"
            step.message = f"topology {topology} runs; supervisors {ready}/{want} ready"
            if self.previous.get("reason") != "TopologySubmitted":
                step.events.append(("TopologySubmitted", f"topology {topology} submitted to Nimbus "
                                    f"{managed.dns(self.app, self.namespace, 'nimbus')}:{managed.NIMBUS_PORT}"))
            return
        stuck = self._role_waiting(pods, "submit")
        step.reason = "TopologySubmitting"
        step.message = stuck or f"submitting topology {topology} (supervisors {ready}/{want} ready)"

    def _pods(self) -> dict[str, list[dict[str, Any]]]:
        resp = kube.core().list_namespaced_pod(self.namespace, label_selector=f"{LABEL_APP}={self.app}",
                                               _preload_content=False)
        by_role: dict[str, list[dict[str, Any]]] = {}
        for pod in json.loads(resp.data).get("items", []):
            if not pod["metadata"].get("deletionTimestamp"):
                by_role.setdefault(pod["metadata"].get("labels", {}).get(LABEL_ROLE, ""), []).append(pod)
        return by_role

    def _role_waiting(self, pods: dict[str, list[dict[str, Any]]], role: str) -> str | None:
        """Why the pod of `role` is not ready yet, in Kubernetes' words where it has some; None when it is."""
        found = pods.get(role, [])
        if role != "submit" and any(_ready(p) for p in found):
            return None
        if not found:
            return f"no {role} pod yet" if role != "submit" else None
        return stuck(found[0], role) or (f"the {role} pod is starting" if role != "submit" else None)


def _ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and all(c.get("ready") for c in status.get("containerStatuses") or [])


def stuck(pod: dict[str, Any], role: str) -> str | None:
    """What keeps a pod from running, in Kubernetes' words: not schedulable (e.g. its claim is unbound), its image
    cannot be pulled, it crashes over and over (its init containers included)."""
    why = why_not_running(pod, init_containers=True)
    if why is None:
        return None
    container, detail = why
    if container is None:
        return f"the {role} pod is not scheduled: {detail}"
    return f"the {role} pod's {container} container is waiting: {detail}"
