"""Shared fixtures. One real control plane (scripts/test-cluster) serves the whole test session."""
from __future__ import annotations

import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEST_CLUSTER = ROOT / "scripts" / "test-cluster"


@dataclass(frozen=True)
class Cluster:
    kubeconfig: str
    bin_dir: str

    def env(self) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": self.kubeconfig, "PATH": f"{self.bin_dir}:{os.environ['PATH']}"}

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        """Run the real kubectl against the test cluster; output captured as text."""
        proc = subprocess.run(["kubectl", *args], input=input, capture_output=True, text=True,
                              env=self.env(), timeout=120)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed:\n{proc.stderr}")
        return proc


@pytest.fixture(scope="session")
def cluster() -> Cluster:
    """Start (or reuse) the test control plane; stop it at the end unless ELASTREAM_KEEP_CLUSTER=1."""
    up = subprocess.run([str(TEST_CLUSTER), "up", "--nodes", "2"], capture_output=True, text=True, timeout=3600)
    if up.returncode != 0:
        raise RuntimeError(f"scripts/test-cluster up failed:\n{up.stderr[-4000:]}")
    bin_dir = subprocess.run([str(TEST_CLUSTER), "bin-dir"], capture_output=True, text=True, check=True).stdout.strip()
    yield Cluster(kubeconfig=up.stdout.strip().splitlines()[-1], bin_dir=bin_dir)
    if os.environ.get("ELASTREAM_KEEP_CLUSTER") != "1":
        subprocess.run([str(TEST_CLUSTER), "down"], capture_output=True, timeout=300)


@pytest.fixture(scope="session")
def real_cluster(cluster: Cluster) -> Cluster:
    """The session's cluster with two real nodes (kubelet + containerd: pods really run) and the project's images
    imported into them. Simulated nodes get a NoSchedule taint from then on. Needs root."""
    if os.geteuid() != 0:
        pytest.skip("real nodes need root (containerd, kubelet, iptables)")
    for step in (["up", "--nodes", "2", "--real-nodes", "2"], ["images"]):
        proc = subprocess.run([str(TEST_CLUSTER), *step], capture_output=True, text=True, timeout=3600)
        if proc.returncode != 0:
            raise RuntimeError(f"scripts/test-cluster {' '.join(step)} failed:\n{proc.stderr[-4000:]}")
    return cluster


@pytest.fixture(scope="session")
def crds_installed(cluster: Cluster) -> Cluster:
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "crds"))
    cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    return cluster


@pytest.fixture
def namespace(crds_installed: Cluster):
    """A fresh namespace per test, deleted afterwards."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    crds_installed.kubectl("create", "namespace", name)
    yield name
    crds_installed.kubectl("delete", "namespace", name, "--wait=false", check=False)


def pytest_collection_modifyitems(config, items):
    # tests using the cluster get the `cluster` mark, so `-m "not cluster"` runs only pure tests
    for item in items:
        if {"cluster", "crds_installed", "namespace"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.cluster)
