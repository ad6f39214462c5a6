"""A managed Storm app: its manifests (ZooKeeper, Nimbus + exporter, supervisors, the submit Job, the shared volume),
the supervisors that follow the workers, the realizer's hooks around a rebalance, and the reconcile's words."""
import json
from types import SimpleNamespace

import pytest
import yaml

from elastream.api.streamapp import StreamAppSpec
from elastream.engines.base import JobUnreachable
from elastream.engines.storm import managed
from elastream.engines.storm.kubernetes import Step, stuck
from elastream.engines.storm.realizer import RebalanceRealizer
from elastream.engines.storm.supervisors import DELETION_COST, Supervisors
from elasticity.model import Decision

BODY = {"apiVersion": "elastream.io/v1alpha1", "kind": "StreamApp",
        "metadata": {"name": "wc", "namespace": "jobs", "uid": "u-1"}}
STORM = {"application": {"builtin": "wordcount"}, "workers": {"initial": 2, "min": 1, "max": 4},
         "executorsPerWorker": 2, "parallelism": {"spout": 1, "split": 1, "count": 1, "sink": 1},
         "maxParallelism": {"spout": 1, "split": 4, "count": 6, "sink": 1}}


def spec(**storm) -> StreamAppSpec:
    return StreamAppSpec.model_validate({"engine": "storm", "storm": {**STORM, **storm}})


def container(obj: dict, name: str) -> dict:
    pod = obj["spec"]["template"]["spec"]
    return next(c for c in pod["containers"] + pod.get("initContainers", []) if c["name"] == name)


def env(c: dict) -> dict:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c.get("env", [])}


# -- manifests ---------------------------------------------------------------------------------------------------

def test_nimbus_is_reached_through_its_service_on_6627_as_the_operator_expects():
    from elastream.engines.storm.operator import nimbus_address

    assert nimbus_address("jobs", "wc", spec()) == ("wc-nimbus.jobs.svc", 6627)
    svc = next(o for o in managed.owned_objects(BODY, spec()) if o["kind"] == "Service" and
               o["metadata"]["name"] == "wc-nimbus")
    assert {"name": "thrift", "port": 6627, "targetPort": 6627} in svc["spec"]["ports"]
    assert svc["spec"]["selector"] == {"elastream.io/app": "wc", "elastream.io/role": "nimbus"}
    conf = yaml.safe_load(managed.config_map(BODY, spec())["data"]["storm.yaml"])
    assert conf["nimbus.seeds"] == ["wc-nimbus.jobs.svc"] and conf["nimbus.thrift.port"] == 6627
    assert conf["storm.zookeeper.servers"] == ["wc-zookeeper.jobs.svc"] and conf["storm.zookeeper.port"] == 2181
    # placement plans reach Nimbus through its scheduler; without a plan it is Storm's default one
    assert conf["storm.scheduler"] == "io.elastream.storm.scheduler.PlanScheduler"


def test_every_object_is_owned_by_the_streamapp_and_labelled():
    objs = [*managed.owned_objects(BODY, spec()), managed.supervisors(BODY, spec(), 1), managed.submit_job(BODY, spec())]
    assert [o["kind"] for o in objs] == ["PersistentVolumeClaim", "ConfigMap", "Service", "Service", "Deployment",
                                         "Deployment", "Deployment", "Job"]
    for o in objs:
        assert o["metadata"]["ownerReferences"][0]["uid"] == "u-1", o["metadata"]["name"]
        assert o["metadata"]["labels"]["elastream.io/app"] == "wc"
        assert o["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "elastream"


def test_the_exporter_runs_beside_nimbus_and_is_discovered_by_annotations():
    nimbus = managed.nimbus(BODY, spec())
    annotations = nimbus["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true" and annotations["prometheus.io/port"] == "9108"
    exporter = container(nimbus, "exporter")
    args = exporter["args"]
    assert args[:2] == ["elastream", "storm-exporter"]
    assert args[args.index("--nimbus") + 1] == "127.0.0.1:6627" and args[args.index("--app") + 1] == "wc"
    assert args[args.index("--topology") + 1] == "wc" and args[args.index("--listen") + 1] == "0.0.0.0:9108"
    assert args[args.index("--source-state") + 1] == "/var/lib/elastream/wc/state"
    assert {"name": "metrics", "containerPort": 9108} in exporter["ports"]
    assert env(container(nimbus, "nimbus"))["STORM_HOSTNAME"] == "wc-nimbus.jobs.svc"
    daemon = container(nimbus, "nimbus")["args"]
    assert daemon[daemon.index("--local-dir") + 1] == "/var/lib/elastream/wc/nimbus"  # kept when the pod is replaced


def test_supervisors_are_known_by_their_pod_ip_and_carry_the_slots():
    s = spec(slotsPerSupervisor=3)
    dep = managed.supervisors(BODY, s, 2)
    assert dep["spec"]["replicas"] == 2
    sup = container(dep, "supervisor")
    assert env(sup)["STORM_HOSTNAME"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert [p["containerPort"] for p in sup["ports"]] == [6700, 6701, 6702]
    conf = yaml.safe_load(managed.config_map(BODY, s)["data"]["storm.yaml"])
    assert conf["supervisor.slots.ports"] == [6700, 6701, 6702]
    assert sup["resources"]["requests"]["memory"] == f"{managed.DAEMON_MEMORY_MI + 3 * managed.SLOT_MEMORY_MI}Mi"
    assert dep["spec"]["template"]["spec"]["topologySpreadConstraints"][0]["topologyKey"] == "kubernetes.io/hostname"


def test_the_submit_job_submits_the_initial_layout_with_tasks_at_max_parallelism():
    cfg = json.loads(managed.config_map(BODY, spec())["data"]["submit.json"])
    assert cfg["name"] == "wc" and cfg["app"] == "wordcount"
    assert cfg["parallelism"] == {"spout": 1, "split": 1, "count": 1, "sink": 1}
    assert cfg["maxParallelism"] == {"spout": 1, "split": 4, "count": 6, "sink": 1}
    assert cfg["workers"] == 2  # ceil(4 executors / 2 per worker)
    assert cfg["nimbusHost"] == "wc-nimbus.jobs.svc" and cfg["stateDir"] == "/var/lib/elastream/wc/state"
    job = managed.submit_job(BODY, spec())
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
    assert container(job, "submit")["args"][:4] == ["python3", "-m", "storm_apps.pod", "submit"]


def test_a_hot_word_reaches_the_spout_through_the_submit_job_and_none_is_sent_by_default():
    hot = spec(application={"builtin": "wordcount", "hotWordShare": 0.4})
    assert json.loads(managed.config_map(BODY, hot)["data"]["submit.json"])["generator"]["hot_word_share"] == 0.4
    assert "hot_word_share" not in json.loads(managed.config_map(BODY, spec())["data"]["submit.json"])["generator"]
    with pytest.raises(ValueError, match="hotWordShare"):
        spec(application={"builtin": "wordcount", "hotWordShare": 1.0})  # all words one word: no spread left
    with pytest.raises(ValueError, match="hotWordShare applies to builtin wordcount"):
        spec(application={"builtin": "pipeline", "hotWordShare": 0.5})


def test_initial_supervisors_follow_the_initial_workers():
    assert managed.supervisors_for(2, 2) == 1 and managed.supervisors_for(3, 2) == 2
    assert managed.supervisors_for(0, 2) == 1  # somewhere to run, always
    executors, _ = managed.layout("wc", spec())
    assert managed.initial_workers(spec(), executors) == 2


def test_every_storm_pod_mounts_the_shared_volume_and_runs_as_the_storm_user():
    s = spec(storage={"claimName": "team-nfs", "fixPermissions": True}, image="r/storm:1", imagePullPolicy="Always")
    assert "PersistentVolumeClaim" not in [o["kind"] for o in managed.owned_objects(BODY, s)]
    for obj in (managed.nimbus(BODY, s), managed.supervisors(BODY, s, 1), managed.submit_job(BODY, s)):
        pod = obj["spec"]["template"]["spec"]
        assert {"name": "data", "persistentVolumeClaim": {"claimName": "team-nfs"}} in pod["volumes"]
        assert pod["securityContext"]["runAsUser"] == 185 and pod["securityContext"]["fsGroup"] == 185
        assert pod["initContainers"][0]["name"] == "fix-permissions"
        assert all(c["image"] == "r/storm:1" and c["imagePullPolicy"] == "Always" for c in pod["containers"])
    zk = managed.zookeeper(BODY, s)["spec"]["template"]["spec"]
    assert not any(v["name"] == "data" for v in zk["volumes"])  # ZooKeeper's data is its own (emptyDir)


def test_a_new_storm_yaml_rolls_the_daemons_and_a_new_topology_spec_the_submit_job():
    base = managed.nimbus(BODY, spec())["spec"]["template"]["metadata"]["annotations"][managed.SPEC_HASH]
    slots = managed.nimbus(BODY, spec(slotsPerSupervisor=3))["spec"]["template"]["metadata"]["annotations"]
    assert slots[managed.SPEC_HASH] != base  # storm.yaml changed
    same = managed.nimbus(BODY, spec(parallelism={"spout": 1, "split": 2, "count": 1, "sink": 1}))
    assert same["spec"]["template"]["metadata"]["annotations"][managed.SPEC_HASH] == base
    assert managed.submit_hash("wc", "jobs", spec()) != managed.submit_hash(
        "wc", "jobs", spec(parallelism={"spout": 1, "split": 2, "count": 1, "sink": 1}))
    assert managed.submit_hash("wc", "jobs", spec()) == managed.submit_hash("wc", "jobs", spec())


# -- supervisors follow the workers ------------------------------------------------------------------------------

class FakeCluster:
    """A Deployment's scale, its pods and Nimbus' view of them: scaling up lists new supervisors after `lag`
    polls; scaling down deletes the pods with the lowest deletion cost, as the ReplicaSet does."""

    def __init__(self, used: dict[str, int], lag: int = 2):
        self.pods = [{"metadata": {"name": f"s-{ip}", "annotations": {}, "creationTimestamp": f"t{i}"},
                      "status": {"podIP": ip}} for i, ip in enumerate(used)]
        self.used, self.lag, self.pending, self.calls = dict(used), lag, 0, []

    # AppsV1Api
    def read_namespaced_deployment_scale(self, name, ns):
        return SimpleNamespace(spec=SimpleNamespace(replicas=len(self.pods) + self.pending))

    def patch_namespaced_deployment_scale(self, name, ns, body):
        want = body["spec"]["replicas"]
        self.calls.append(("scale", want))
        have = len(self.pods)
        if want > have:
            self.pending = want - have
        else:
            cost = lambda p: int(p["metadata"]["annotations"].get(DELETION_COST, "0"))
            for p in sorted(self.pods, key=cost)[:have - want]:
                self.pods.remove(p)
                self.used.pop(p["status"]["podIP"])

    # CoreV1Api
    def list_namespaced_pod(self, ns, label_selector, _preload_content):
        return SimpleNamespace(data=json.dumps({"items": self.pods}))

    def patch_namespaced_pod(self, name, ns, body):
        self.calls.append(("annotate", name))
        pod = next(p for p in self.pods if p["metadata"]["name"] == name)
        pod["metadata"]["annotations"].update(body["metadata"]["annotations"])

    # NimbusClient
    def cluster(self):
        if self.pending:
            self.lag -= 1
            if self.lag <= 0:
                for i in range(self.pending):
                    ip = f"10.0.9.{i}"
                    self.pods.append({"metadata": {"name": f"s-{ip}", "annotations": {}, "creationTimestamp": "t9"},
                                      "status": {"podIP": ip}})
                    self.used[ip] = 0
                self.pending = 0
        return SimpleNamespace(supervisors=[SimpleNamespace(host=ip, num_used_workers=n) for ip, n in self.used.items()])


def supervisors(fake: FakeCluster, slots: int = 2, timeout_s: float = 60.0) -> Supervisors:
    clock = iter(range(10_000))
    return Supervisors("jobs", "wc", slots, fake, apps_api=fake, core_api=fake, timeout_s=timeout_s,
                       clock=lambda: float(next(clock)), sleep=lambda s: None)


def test_more_workers_add_supervisors_first_and_wait_until_nimbus_lists_them():
    fake = FakeCluster({"10.0.1.1": 2}, lag=3)
    s = supervisors(fake)
    s.before(3)  # 3 workers need 2 supervisors of 2 slots
    assert fake.calls == [("scale", 2)] and len(fake.used) == 2
    assert len(s.changes) == 1 and (s.changes[0].before, s.changes[0].after) == (1, 2)
    s.before(3)  # enough already: nothing to do
    assert fake.calls == [("scale", 2)]


def test_supervisors_that_nimbus_never_lists_fail_the_rescale():
    fake = FakeCluster({"10.0.1.1": 2}, lag=10_000)
    with pytest.raises(JobUnreachable, match="Nimbus lists 1"):
        supervisors(fake, timeout_s=5).before(4)


def test_fewer_workers_remove_the_least_loaded_supervisors_before_the_rebalance():
    fake = FakeCluster({"10.0.1.1": 2, "10.0.1.2": 1, "10.0.1.3": 2})
    supervisors(fake).before(3)  # 3 workers: 2 supervisors; the one running 1 worker goes
    assert ("annotate", "s-10.0.1.2") in fake.calls and ("scale", 2) in fake.calls
    assert sorted(fake.used) == ["10.0.1.1", "10.0.1.3"]


def test_after_a_rebalance_only_idle_supervisors_beyond_the_need_go():
    fake = FakeCluster({"10.0.1.1": 1, "10.0.1.2": 1, "10.0.1.3": 0})
    s = supervisors(fake)
    s.after(2)  # 2 workers need 1 supervisor; only one is idle
    assert sorted(fake.used) == ["10.0.1.1", "10.0.1.2"]
    s.after(2)  # none idle: nothing
    assert sorted(fake.used) == ["10.0.1.1", "10.0.1.2"]


def test_the_realizer_calls_the_hooks_around_the_rebalance_with_the_new_workers():
    calls = []

    class Nimbus:
        def rebalance(self, topology, executors, workers, wait_s, conf_overrides=None):
            calls.append(("rebalance", executors, workers))

        def wait_rebalanced(self, topology, executors, workers, timeout_s):
            return 1.0

    r = RebalanceRealizer(Nimbus(), "wc", 2, (1, 4), before=lambda w: calls.append(("before", w)),
                          after=lambda w: calls.append(("after", w)))
    d = Decision(job="wc", timestamp=0.0, policy="ds2", action="scale", reason="r",
                 current={"spout": 1, "split": 1, "count": 1, "sink": 1},
                 targets={"spout": 1, "split": 1, "count": 4, "sink": 1})
    r.realize("wc", d)
    assert calls == [("before", 4), ("rebalance", {"count": 4}, 4), ("after", 4)]


# -- what the reconcile pass says ----------------------------------------------------------------------------------

def test_reconcile_steps_become_conditions():
    st = Step(reason="ClusterStarting", message="no nimbus pod yet").status({}, 3)
    (progressing,) = st["conditions"]
    assert (progressing["type"], progressing["status"], progressing["reason"]) == ("Progressing", "True",
                                                                                   "ClusterStarting")
    st = Step(suspended=True, message="suspended").status({}, 3)
    assert st["phase"] == "Suspended" and {c["type"]: c["status"] for c in st["conditions"]}["Ready"] == "False"
    st = Step(failed=True, reason="SubmitFailed", message="the submit Job failed").status({}, 3)
    assert st["phase"] == "Failed" and (st["conditions"][0]["status"], st["conditions"][0]["reason"]) == (
        "False", "SubmitFailed")


def test_stuck_pods_are_explained_in_kubernetes_words():
    unschedulable = {"status": {"conditions": [{"type": "PodScheduled", "status": "False",
                                                "message": "0/2 nodes are available: unbound claim"}]}}
    assert "not scheduled: 0/2 nodes" in stuck(unschedulable, "nimbus")
    pulling = {"status": {"containerStatuses": [{"name": "nimbus", "state": {"waiting": {
        "reason": "ErrImageNeverPull", "message": "image not present"}}}]}}
    assert "nimbus container is waiting: ErrImageNeverPull: image not present" in stuck(pulling, "nimbus")
    creating = {"status": {"containerStatuses": [{"name": "n", "state": {"waiting": {"reason": "ContainerCreating"}}}]}}
    assert stuck(creating, "nimbus") is None


def test_a_component_the_topology_lacks_is_refused_naming_the_field():
    from elastream.api.manifests import ManifestError

    with pytest.raises(ManifestError) as err:
        managed.layout("wc", spec(maxParallelism={"split": 4, "splitter": 2}))
    assert "spec.storm.maxParallelism: splitter is not a component of wordcount" in "; ".join(err.value.problems)
