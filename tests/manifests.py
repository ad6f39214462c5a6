"""Valid and malformed manifests shared by the model tests and the API-server tests."""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent


def example(kind: str) -> dict[str, Any]:
    for doc in yaml.safe_load_all((ROOT / "examples" / "wordcount.yaml").read_text()):
        if doc["kind"] == kind:
            return doc
    raise KeyError(kind)


def with_changes(doc: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """A copy of doc with dotted paths set ("spec.spark.executors.min": 5) or removed (value DELETE)."""
    out = copy.deepcopy(doc)
    for path, value in changes.items():
        *parents, leaf = path.split(".")
        node = out
        for key in parents:
            node = node.setdefault(key, {})
        if value is DELETE:
            node.pop(leaf, None)
        else:
            node[leaf] = value
    return out


DELETE = object()
STORM = {"attach": {"nimbusHost": "nimbus"}, "topology": "wc"}

# (id, kind, changes, field the error must name, words the message must contain)
MALFORMED = [
    ("min-above-initial", "StreamApp", {"spec.spark.executors": {"initial": 2, "min": 3, "max": 4}},
     "spec.spark.executors.min", "min must be less than or equal to initial"),
    ("initial-above-max", "StreamApp", {"spec.spark.executors": {"initial": 5, "min": 1, "max": 4}},
     "spec.spark.executors.initial", "initial must be less than or equal to max"),
    ("missing-engine-section", "StreamApp", {"spec.spark": DELETE},
     "spec.spark", "spark is required when engine is spark"),
    ("both-sections", "StreamApp", {"spec.storm": STORM},
     "spec.storm", "storm must not be set when engine is spark"),
    ("storm-without-section", "StreamApp", {"spec.engine": "storm"},
     "spec.storm", "storm is required when engine is storm"),
    ("unknown-engine", "StreamApp", {"spec.engine": "flink"}, "spec.engine", "flink"),
    ("missing-engine", "StreamApp", {"spec.engine": DELETE}, "spec.engine", "Required"),
    ("wrong-type", "StreamApp", {"spec.spark.executors.max": "three"}, "spec.spark.executors.max", "integer"),
    ("zero-executors", "StreamApp", {"spec.spark.executors": {"initial": 1, "min": 0, "max": 4}},
     "spec.spark.executors.min", "greater than or equal to 1"),
    ("negative-parallelism", "StreamApp", {"spec.spark.maxParallelism": -4},
     "spec.spark.maxParallelism", "greater than or equal to 1"),
    ("both-policies", "StreamApp", {"spec.policy": {"mode": "advisor"}},
     "spec.policy", "set policyRef or policy, not both"),
    ("both-app-kinds", "StreamApp", {"spec.spark.application": {"builtin": "wordcount", "file": "/x.py"}},
     "spec.spark.application", "exactly one of builtin or file"),
    ("kafka-without-section", "StreamApp", {"spec.spark.source": {"type": "kafka"}},
     "spec.spark.source.kafka", "kafka is required when type is kafka"),
    ("replicas-out-of-range", "StreamApp", {"spec.replicas": 9},
     "spec.replicas", "replicas must be within spark.executors.min and spark.executors.max"),
    ("bad-memory", "StreamApp", {"spec.spark.executor.memory": "lots"}, "spec.spark.executor.memory", "should match"),
    ("bad-policy-name", "StreamApp", {"spec.policyRef.name": "Latency_5s"}, "spec.policyRef.name", "should match"),
    ("unknown-builtin", "StreamApp", {"spec.spark.application": {"builtin": "pagerank"}},
     "spec.spark.application.builtin", "pagerank"),
    ("unparsable-duration", "ElasticityPolicy", {"spec.latencyTarget": "5 seconds"}, "spec.latencyTarget", "should match"),
    ("zero-duration", "ElasticityPolicy", {"spec.evaluationInterval": "0s"},
     "spec.evaluationInterval", "must be a positive duration"),
    ("window-below-interval", "ElasticityPolicy", {"spec.metricsWindow": "10s", "spec.evaluationInterval": "1m"},
     "spec.metricsWindow", "metricsWindow must be at least evaluationInterval"),
    ("bad-url", "ElasticityPolicy", {"spec.metrics.prometheus.url": "prometheus:9090"},
     "spec.metrics.prometheus.url", "should match"),
    ("unknown-detector", "ElasticityPolicy", {"spec.detector": "magic"}, "spec.detector", "magic"),
    ("unknown-mode", "ElasticityPolicy", {"spec.mode": "manual"}, "spec.mode", "manual"),
    ("utilization-above-one", "ElasticityPolicy", {"spec.targetUtilization": 1.5},
     "spec.targetUtilization", "less than or equal to 1"),
    ("utilization-zero", "ElasticityPolicy", {"spec.targetUtilization": 0}, "spec.targetUtilization", "greater than 0"),
    ("zero-step", "ElasticityPolicy", {"spec.scaleUp.maxStep": 0}, "spec.scaleUp.maxStep", "greater than or equal to 1"),
    ("negative-rescales", "ElasticityPolicy", {"spec.maxRescalesPerHour": -1},
     "spec.maxRescalesPerHour", "greater than or equal to 1"),
    ("bounds-inverted", "ElasticityPolicy", {"spec.bounds": {"min": 5, "max": 2}},
     "spec.bounds.min", "min must be less than or equal to max"),
]


def malformed(case_id: str) -> tuple[dict[str, Any], str, str]:
    for cid, kind, changes, field, words in MALFORMED:
        if cid == case_id:
            return with_changes(example(kind), changes), field, words
    raise KeyError(case_id)
