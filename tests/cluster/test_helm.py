"""The Helm chart: lints, installs on the real API server, and grants the operator what it needs, no more —
cluster-wide, or with watchNamespaces only in the watched namespaces."""
import json
import subprocess
import uuid

import pytest
import yaml

from elastream.engines.spark import managed
from elastream.api.streamapp import StreamAppSpec
from tests.cluster.conftest import apply, get, managed_app
from tests.conftest import ROOT

CHART = str(ROOT / "charts" / "elastream")


def helm(cluster, *args, check=True):
    proc = subprocess.run(["helm", *args], capture_output=True, text=True, env=cluster.env(), timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{proc.stderr}")
    return proc


def test_chart_lints(cluster):
    assert "0 chart(s) failed" in helm(cluster, "lint", CHART).stdout


def test_values_schema_rejects_bad_values(cluster):
    proc = helm(cluster, "lint", CHART, "--set", "replicaCount=0", check=False)
    assert proc.returncode != 0 and "replicaCount" in proc.stdout + proc.stderr
    proc = helm(cluster, "lint", CHART, "--set", "settings.workers=0", check=False)
    assert proc.returncode != 0 and "workers" in proc.stdout + proc.stderr
    proc = helm(cluster, "lint", CHART, "--set", "settings.shard=not a label", check=False)
    assert proc.returncode != 0 and "shard" in proc.stdout + proc.stderr


@pytest.fixture
def release(crds_installed):
    ns = f"elastream-system-{uuid.uuid4().hex[:6]}"
    helm(crds_installed, "install", "elastream", CHART, "-n", ns, "--create-namespace", "--wait=false")
    yield ns
    helm(crds_installed, "uninstall", "elastream", "-n", ns, check=False)
    crds_installed.kubectl("delete", "namespace", ns, "--wait=false", check=False)


# what the operator does in a namespace it serves, and what it must never do
ALLOWED = [("watch", "streamapps.elastream.io"), ("patch", "streamapps.elastream.io/status"),
           ("patch", "streamapps.elastream.io/scale"), ("create", "events"), ("create", "pods"), ("delete", "pods"),
           ("deletecollection", "pods"), ("deletecollection", "configmaps"), ("update", "configmaps"),
           ("create", "persistentvolumeclaims"), ("list", "persistentvolumeclaims"),
           ("deletecollection", "persistentvolumeclaims"), ("create", "services"), ("create", "serviceaccounts"),
           ("create", "roles.rbac.authorization.k8s.io"), ("create", "rolebindings.rbac.authorization.k8s.io"),
           ("get", "secrets"), ("create", "secrets"),
           # a managed Storm cluster: ZooKeeper, Nimbus and supervisor Deployments, the submit Job
           ("create", "deployments.apps"), ("patch", "deployments.apps/scale"), ("create", "jobs.batch"),
           ("delete", "jobs.batch")]
DENIED = [("delete", "streamapps.elastream.io"), ("create", "streamapps.elastream.io"), ("create", "daemonsets.apps"),
          ("create", "statefulsets.apps"), ("create", "cronjobs.batch"),
          ("delete", "persistentvolumeclaims"), ("delete", "namespaces"),
          ("create", "clusterroles.rbac.authorization.k8s.io"), ("escalate", "roles.rbac.authorization.k8s.io"),
          ("bind", "roles.rbac.authorization.k8s.io"), ("delete", "customresourcedefinitions.apiextensions.k8s.io"),
          ("patch", "nodes"), ("delete", "nodes"),
          ("create", "mutatingwebhookconfigurations.admissionregistration.k8s.io")]
# placement reads every node and the pods on it (what each node has left), and nothing more
PLACEMENT_READS = [("get", "nodes"), ("list", "nodes"), ("list", "pods")]


def _can(k, sa, verb, resource, *where):
    return k.kubectl("auth", "can-i", verb, resource, "--as", sa, *where, check=False).stdout.strip()


def _creates_what_managed_mode_creates(k, sa: str, namespace: str) -> None:
    """Create, as the operator's ServiceAccount, every object of a managed StreamApp — the driver's Role too, which
    the API server allows only if the operator holds every verb it grants."""
    apply(k, namespace, managed_app())
    body = get(k, namespace, "streamapp", "wordcount")
    spec = StreamAppSpec.model_validate(body["spec"])
    for manifest in [*managed.owned_objects(body, spec, token="t"), managed.driver_pod(body, spec)]:
        proc = k.kubectl("create", "-n", namespace, "--as", sa, "-f", "-", input=yaml.safe_dump(manifest), check=False)
        assert proc.returncode == 0, f"the operator cannot create {manifest['kind']}: {proc.stderr}"


def test_install_brings_crds_and_least_privilege_rbac(crds_installed, release, namespace):
    k = crds_installed
    crds = k.kubectl("get", "crd", "-o", "name").stdout
    for name in ("streamapps.elastream.io", "elasticitypolicies.elastream.io", "clusterkopfpeerings.kopf.dev"):
        assert name in crds
    deploy = json.loads(k.kubectl("get", "deployment", "elastream", "-n", release, "-o", "json").stdout)
    assert deploy["spec"]["template"]["spec"]["serviceAccountName"] == "elastream"
    env = {e["name"]: e.get("value") for e in deploy["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert (env["ELASTREAM_WORKERS"], env["ELASTREAM_SLOW_WORKERS"]) == ("16", "32")
    assert env["ELASTREAM_SHARD"] is None  # no shard: every StreamApp (the API server drops the empty value)
    sa = f"system:serviceaccount:{release}:elastream"
    allowed = ALLOWED + PLACEMENT_READS + [("patch", "clusterkopfpeerings.kopf.dev"),
                                           ("list", "customresourcedefinitions.apiextensions.k8s.io")]
    for verb, res in allowed:
        assert _can(k, sa, verb, res, "-A") == "yes", f"operator cannot {verb} {res}"
    for verb, res in DENIED:
        assert _can(k, sa, verb, res, "-A") == "no", f"operator may {verb} {res}"
    assert _can(k, sa, "create", "pods", "-A", "--subresource=exec") == "no", "operator may exec into pods"
    _creates_what_managed_mode_creates(k, sa, namespace)


@pytest.fixture
def namespaced_release(crds_installed, namespace):
    """A release watching only `namespace`: its rights are Roles there, plus a small ClusterRole."""
    ns, name = f"elastream-ns-{uuid.uuid4().hex[:6]}", f"elastream-{uuid.uuid4().hex[:4]}"
    helm(crds_installed, "install", name, CHART, "-n", ns, "--create-namespace", "--wait=false",
         "--set", f"watchNamespaces={{{namespace}}}")
    yield ns, name
    helm(crds_installed, "uninstall", name, "-n", ns, check=False)
    crds_installed.kubectl("delete", "namespace", ns, "--wait=false", check=False)


def test_watch_namespaces_grants_rights_only_there(crds_installed, namespaced_release, namespace):
    k, (release_ns, name) = crds_installed, namespaced_release
    sa = f"system:serviceaccount:{release_ns}:{name}"
    other = f"t-other-{uuid.uuid4().hex[:6]}"
    k.kubectl("create", "namespace", other)
    try:
        for verb, res in ALLOWED + [("patch", "kopfpeerings.kopf.dev")]:
            assert _can(k, sa, verb, res, "-n", namespace) == "yes", f"operator cannot {verb} {res} in {namespace}"
            assert _can(k, sa, verb, res, "-n", other) == "no", f"operator may {verb} {res} in {other}"
        for verb, res in DENIED:
            assert _can(k, sa, verb, res, "-n", namespace) == "no", f"operator may {verb} {res}"
        assert _can(k, sa, "list", "customresourcedefinitions.apiextensions.k8s.io") == "yes"
        assert _can(k, sa, "list", "namespaces") == "yes"
        for verb, res in PLACEMENT_READS:
            assert _can(k, sa, verb, res, "-n", other) == "yes", f"placement cannot {verb} {res}"
        assert _can(k, sa, "update", "configmaps", "-n", release_ns) == "yes", "no placement view"
        _creates_what_managed_mode_creates(k, sa, namespace)
    finally:
        k.kubectl("delete", "namespace", other, "--wait=false", check=False)
