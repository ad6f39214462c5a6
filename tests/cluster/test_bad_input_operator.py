"""Random specs against the real API server and the real operator: whatever the API server accepts, the operator
evaluates without crashing, and an app it cannot use gets a condition whose message names the field.

Each document is a random mutation of an attach-mode StreamApp (no pods: the job's endpoints are unreachable, so a
good app is a cheap hold). Documents go in small batches: the operator's loop holds a thread per app.
"""
from __future__ import annotations

import copy
import json
import random

import pytest
import yaml

from tests.cluster.conftest import get
from tests.manifests import example
from tests.operator_fixtures import operator_in_process, wait_for

pytestmark = pytest.mark.slow

SEED, DOCUMENTS, BATCH = 20261124, 32, 4
# values the schema accepts but that the operator must judge, and values the schema should refuse
POOL = [None, 0, 1, 3, 7, 1000, -1, "2", "yes", True, "", "x" * 300, [], {}, "1.5g", "0s", "9999999h", "1h",
        {"name": "no-such-policy"}, {"min": 5, "max": 9}, {"bounds": {"min": 50, "max": 60}},
        {"algorithm": "mestream"}, {"mode": "advisor"}, "storm", "spark", {"nimbusHost": "nimbus"},
        {"attach": {"nimbusHost": "127.0.0.1", "nimbusPort": 9}}]


def base_app(name: str) -> dict:
    app = example("StreamApp")
    app["metadata"] = {"name": name}
    app["spec"].pop("policyRef")
    app["spec"]["spark"]["attach"] = {"controlURL": "http://127.0.0.1:9", "metricsURL": "http://127.0.0.1:9/metrics",
                                      "tokenSecretRef": {"name": "fuzz-token"}}
    app["spec"]["policy"] = {"metrics": {"prometheus": {"url": "http://127.0.0.1:9"}}, "evaluationInterval": "5s",
                             "metricsWindow": "30s"}
    return app


# changes the schema accepts, but that leave an app the operator cannot use (or can, differently)
SEMANTIC = [
    lambda s: (s.pop("policy"), s.update(policyRef={"name": "no-such-policy"})),
    lambda s: s["policy"].update(bounds={"min": 1, "max": 1}),
    lambda s: s["policy"].update(algorithm="mestream"),
    lambda s: s["policy"].update(mode="advisor"),
    lambda s: s.update(replicas=2),
    lambda s: s.update(suspend=True),
    lambda s: (s.pop("spark"), s.update(engine="storm", storm={"attach": {"nimbusHost": "127.0.0.1", "nimbusPort": 9}})),
    lambda s: s["spark"]["attach"]["tokenSecretRef"].update(name="no-such-secret"),
    lambda s: s["spark"]["attach"]["tokenSecretRef"].update(key="no-such-key"),
    lambda s: s["spark"].update(maxParallelism=1),
]


def mutate(doc: dict, rng: random.Random) -> dict:
    doc = copy.deepcopy(doc)
    for change in rng.sample(SEMANTIC, rng.randint(1, 2)):
        change(doc["spec"])
    for _ in range(rng.choice([0, 0, 1, 2])):
        paths, stack = [], [((), doc["spec"])]
        while stack:
            path, node = stack.pop()
            for k, v in node.items():
                paths.append((*path, k))
                if isinstance(v, dict):
                    stack.append(((*path, k), v))
        path = rng.choice(paths + [("policyRef",), ("replicas",), ("storm",), ("policy", "bounds")])
        parent = doc["spec"]
        for key in path[:-1]:
            parent = parent.setdefault(key, {}) if isinstance(parent, dict) else {}
        if isinstance(parent, dict):
            parent[path[-1]] = copy.deepcopy(rng.choice(POOL))
    return doc


def test_random_specs_never_crash_the_operator_and_unusable_ones_name_a_field(crds_installed, namespace):
    k, rng = crds_installed, random.Random(SEED)
    k.kubectl("create", "secret", "generic", "fuzz-token", "--from-literal=token=t", "-n", namespace)
    accepted, refused = [], []
    with operator_in_process(k, namespace) as runner:
        for first in range(0, DOCUMENTS, BATCH):
            batch = []
            for i in range(first, first + BATCH):
                doc = mutate(base_app(f"fuzz-{i}"), rng)
                proc = k.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(doc), check=False)
                if proc.returncode != 0:
                    assert "spec" in proc.stderr, proc.stderr  # the API server named a field
                    refused.append(doc["metadata"]["name"])
                else:
                    batch.append(doc["metadata"]["name"])
            for name in batch:
                ready = wait_for(f"{name} to get a Ready condition",
                                 lambda: _ready(get(k, namespace, "streamapp", name)), timeout=60)
                if ready["status"] == "False" and ready["reason"] in ("InvalidSpec", "PolicyNotFound",
                                                                      "EngineNotSupported"):
                    assert "spec." in ready["message"], ready
                accepted.append((name, ready["reason"]))
            k.kubectl("delete", "streamapps", "--all", "-n", namespace, "--wait=true")
    assert runner.exit_code == 0, runner.output[-3000:]
    assert "Traceback" not in runner.output, runner.output[-3000:]
    assert accepted and refused, (accepted, refused)  # the mix tested both sides


def _ready(app: dict | None) -> dict | None:
    """The Ready condition once the app was judged (evaluated, refused or suspended; not merely starting)."""
    conditions = ((app or {}).get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c["type"] == "Ready"), None)
    return ready if ready and ready["reason"] != "Starting" else None
