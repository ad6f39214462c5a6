"""Helpers of the real-API-server tests: a managed StreamApp, a volume for its claim, reading its status."""
from __future__ import annotations

import json
import uuid

import pytest
import yaml

from tests.manifests import example


def get(k, namespace: str, kind: str, name: str) -> dict | None:
    proc = k.kubectl("get", kind, name, "-n", namespace, "-o", "json", check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def status(k, namespace: str, name: str = "wordcount") -> dict:
    return (get(k, namespace, "streamapp", name) or {}).get("status") or {}


def condition(k, namespace: str, type_: str, name: str = "wordcount") -> dict:
    return next((c for c in status(k, namespace, name).get("conditions", []) if c["type"] == type_), {})


def events(k, namespace: str, reason: str) -> list[str]:
    items = json.loads(k.kubectl("get", "events", "-n", namespace, "-o", "json").stdout)["items"]
    return [e.get("message", "") for e in items if e.get("reason") == reason]


def managed_app(**spark) -> dict:
    """The example StreamApp in managed mode, with the default (inline) policy and spec.spark fields changed."""
    app = example("StreamApp")
    app["spec"].pop("policyRef")
    app["spec"]["spark"].update(spark)
    return app


def apply(k, namespace: str, doc: dict) -> None:
    k.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(doc))


@pytest.fixture
def fast_resync(monkeypatch):
    """The StreamApp loop checks the driver every 2 s instead of 10 (read when the loop starts)."""
    monkeypatch.setenv("ELASTREAM_RESYNC_SECONDS", "2")


@pytest.fixture
def data_volume(crds_installed, namespace):
    """A PersistentVolume bound in advance to the claim the operator creates for the app `wordcount`, so the
    driver pod can be scheduled (the test cluster has no provisioner). hostPath: KWOK runs no container."""
    k, name = crds_installed, f"data-{uuid.uuid4().hex[:8]}"
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
          "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany"], "storageClassName": "",
                   "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": f"/tmp/elastream-test/{name}"},
                   "claimRef": {"namespace": namespace, "name": "wordcount-data"}}}
    k.kubectl("apply", "-f", "-", input=yaml.safe_dump(pv))
    yield name
    k.kubectl("delete", "pv", name, "--wait=false", check=False)
