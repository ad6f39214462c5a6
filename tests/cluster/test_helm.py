"""The Helm chart: lints, installs on the real API server, and grants the operator what it needs, no more."""
import json
import subprocess
import uuid

import pytest

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


@pytest.fixture
def release(crds_installed):
    ns = f"elastream-system-{uuid.uuid4().hex[:6]}"
    helm(crds_installed, "install", "elastream", CHART, "-n", ns, "--create-namespace", "--wait=false")
    yield ns
    helm(crds_installed, "uninstall", "elastream", "-n", ns, check=False)
    crds_installed.kubectl("delete", "namespace", ns, "--wait=false", check=False)


def test_install_brings_crds_and_least_privilege_rbac(crds_installed, release):
    k = crds_installed
    crds = k.kubectl("get", "crd", "-o", "name").stdout
    for name in ("streamapps.elastream.io", "elasticitypolicies.elastream.io", "clusterkopfpeerings.kopf.dev"):
        assert name in crds
    deploy = json.loads(k.kubectl("get", "deployment", "elastream", "-n", release, "-o", "json").stdout)
    assert deploy["spec"]["template"]["spec"]["serviceAccountName"] == "elastream"
    sa = f"system:serviceaccount:{release}:elastream"

    def can(verb, resource, *extra):
        return k.kubectl("auth", "can-i", verb, resource, "--as", sa, *extra, check=False).stdout.strip()

    allowed = [("watch", "streamapps.elastream.io"), ("patch", "streamapps.elastream.io/status"),
               ("patch", "streamapps.elastream.io/scale"), ("create", "events"), ("create", "pods"),
               ("delete", "pods"), ("create", "roles.rbac.authorization.k8s.io"), ("get", "secrets"),
               ("patch", "clusterkopfpeerings.kopf.dev"), ("list", "customresourcedefinitions.apiextensions.k8s.io")]
    denied = [("delete", "streamapps.elastream.io"), ("create", "streamapps.elastream.io"),
              ("create", "deployments.apps"), ("delete", "namespaces"), ("create", "clusterroles.rbac.authorization.k8s.io"),
              ("delete", "customresourcedefinitions.apiextensions.k8s.io"), ("get", "nodes")]
    for verb, res in allowed:
        assert can(verb, res, "-A") == "yes", f"operator cannot {verb} {res}"
    for verb, res in denied:
        assert can(verb, res, "-A") == "no", f"operator may {verb} {res}"
    assert can("create", "pods", "-A", "--subresource=exec") == "no", "operator may exec into pods"
