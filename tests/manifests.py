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


def storm_app(**fields) -> dict[str, Any]:
    """Changes that turn the example StreamApp into an attached Storm app, with storm fields added or replaced."""
    return {"spec.engine": "storm", "spec.spark": DELETE, "spec.storm": {**STORM, **fields}}


def kafka_source(**fields) -> dict[str, Any]:
    """Changes that make the example's Spark source a Kafka topic, with kafka fields added or replaced."""
    return {"spec.spark.source": {"type": "kafka", "kafka": {"bootstrapServers": "kafka:9092", "topic": "t", **fields}}}

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
     "spec.spark.application", "exactly one of builtin, file or mainApplicationFile"),
    ("kafka-without-section", "StreamApp", {"spec.spark.source": {"type": "kafka"}},
     "spec.spark.source.kafka", "kafka is required when type is kafka"),
    ("trace-profile-without-trace", "StreamApp", {"spec.spark.source": {"generator": {"profile": "trace"}}},
     "spec.spark.source.generator.trace", "trace is required when profile is trace"),
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
    # types: what the API server's schema refuses (a quoted number is a string)
    ("quoted-integer", "StreamApp", {"spec.spark.executors.max": "2"}, "spec.spark.executors.max", "integer"),
    ("quoted-replicas", "StreamApp", {"spec.replicas": "1"}, "spec.replicas", "integer"),
    ("quoted-boolean", "StreamApp", {"spec.suspend": "yes"}, "spec.suspend", "boolean"),
    ("number-as-boolean", "StreamApp", {"spec.suspend": 1}, "spec.suspend", "boolean"),
    ("quoted-float", "ElasticityPolicy", {"spec.targetUtilization": "0.7"}, "spec.targetUtilization", "number"),
    ("float-cores", "StreamApp", {"spec.spark.executor.cores": 1.5}, "spec.spark.executor.cores", "integer"),
    ("number-as-duration", "ElasticityPolicy", {"spec.latencyTarget": 5}, "spec.latencyTarget", "string"),
    ("number-as-image", "StreamApp", {"spec.spark.image": 42}, "spec.spark.image", "string"),
    ("number-conf-value", "StreamApp", {"spec.spark.conf": {"spark.sql.shuffle.partitions": 4}},
     "spec.spark.conf.spark.sql.shuffle.partitions", "string"),
    ("list-as-section", "StreamApp", {"spec.spark.executors": [1, 2]}, "spec.spark.executors", "object"),
    ("string-as-section", "ElasticityPolicy", {"spec.metrics": "prometheus"}, "spec.metrics", "object"),
    ("string-as-args", "StreamApp", {"spec.spark.application": {"file": "/app.py", "args": "--x"}},
     "spec.spark.application.args", "array"),
    ("number-in-args", "StreamApp", {"spec.spark.application": {"file": "/app.py", "args": [3]}},
     "spec.spark.application.args[0]", "string"),
    # enums
    ("unknown-algorithm", "ElasticityPolicy", {"spec.algorithm": "keda"}, "spec.algorithm", "keda"),
    ("unknown-placement", "ElasticityPolicy", {"spec.placement": "random"}, "spec.placement", "random"),
    ("unknown-profile", "StreamApp", {"spec.spark.source.generator.profile": "square"},
     "spec.spark.source.generator.profile", "square"),
    ("unknown-source-type", "StreamApp", {"spec.spark.source.type": "kinesis"}, "spec.spark.source.type", "kinesis"),
    ("unknown-pull-policy", "StreamApp", {"spec.spark.imagePullPolicy": "Sometimes"},
     "spec.spark.imagePullPolicy", "Sometimes"),
    ("lowercase-pull-policy", "StreamApp", {"spec.spark.imagePullPolicy": "always"},
     "spec.spark.imagePullPolicy", "always"),
    ("unknown-offsets", "StreamApp", kafka_source(startingOffsets="newest"),
     "spec.spark.source.kafka.startingOffsets", "newest"),
    ("unknown-storm-app", "StreamApp", storm_app(application={"builtin": "pagerank"}),
     "spec.storm.application.builtin", "pagerank"),
    ("hot-word-share-too-high", "StreamApp", storm_app(application={"builtin": "wordcount", "hotWordShare": 1.0}),
     "spec.storm.application.hotWordShare", "less than 1"),
    ("hot-word-share-on-pipeline", "StreamApp", storm_app(application={"builtin": "pipeline", "hotWordShare": 0.5}),
     "spec.storm.application.hotWordShare", "applies to builtin wordcount"),
    # sizes and quantities
    ("fractional-memory", "StreamApp", {"spec.spark.executor.memory": "1.5g"}, "spec.spark.executor.memory",
     "should match"),
    ("kubernetes-memory", "StreamApp", {"spec.spark.driver.memory": "2Gi"}, "spec.spark.driver.memory",
     "should match"),
    ("negative-memory", "StreamApp", {"spec.spark.executor.memory": "-1g"}, "spec.spark.executor.memory",
     "should match"),
    ("bad-claim-size", "StreamApp", {"spec.spark.storage.size": "ten gigs"}, "spec.spark.storage.size",
     "should match"),
    ("too-many-cores", "StreamApp", {"spec.spark.executor.cores": 65}, "spec.spark.executor.cores",
     "less than or equal to 64"),
    ("zero-cores", "StreamApp", {"spec.spark.driver.cores": 0}, "spec.spark.driver.cores",
     "greater than or equal to 1"),
    ("huge-max", "StreamApp", {"spec.spark.executors": {"initial": 1, "min": 1, "max": 5000}},
     "spec.spark.executors.max", "less than or equal to 1000"),
    ("zero-rate", "StreamApp", {"spec.spark.source.generator.rate": 0}, "spec.spark.source.generator.rate",
     "greater than 0"),
    ("negative-peak", "StreamApp", {"spec.spark.source.generator.peakRate": -5},
     "spec.spark.source.generator.peakRate", "greater than 0"),
    ("zero-replicas", "StreamApp", {"spec.replicas": 0}, "spec.replicas", "greater than or equal to 1"),
    ("phi-zero", "ElasticityPolicy", {"spec.mestream": {"phi": 0}}, "spec.mestream.phi", "greater than 0"),
    ("bounds-zero", "ElasticityPolicy", {"spec.bounds": {"min": 0, "max": 2}}, "spec.bounds.min",
     "greater than or equal to 1"),
    ("bounds-missing-max", "ElasticityPolicy", {"spec.bounds": {"min": 1}}, "spec.bounds.max", "Required"),
    ("port-out-of-range", "StreamApp", storm_app(attach={"nimbusHost": "n", "nimbusPort": 70000}),
     "spec.storm.attach.nimbusPort", "less than or equal to 65535"),
    # durations
    ("duration-overflow", "ElasticityPolicy", {"spec.catchUpDuration": "9999999999h"}, "spec.catchUpDuration",
     "at most 8760h"),
    ("duration-too-long", "ElasticityPolicy", {"spec.stabilizationWindow": "10000h"}, "spec.stabilizationWindow",
     "at most 8760h"),
    ("duration-days", "ElasticityPolicy", {"spec.metricsWindow": "1d"}, "spec.metricsWindow", "should match"),
    ("duration-negative", "ElasticityPolicy", {"spec.latencyTarget": "-5s"}, "spec.latencyTarget", "should match"),
    ("duration-no-unit", "ElasticityPolicy", {"spec.evaluationInterval": "30"}, "spec.evaluationInterval",
     "should match"),
    ("zero-stale-after", "ElasticityPolicy", {"spec.metrics.staleAfter": "0s"}, "spec.metrics.staleAfter",
     "must be a positive duration"),
    ("zero-trigger", "StreamApp", {"spec.spark.triggerInterval": "0ms"}, "spec.spark.triggerInterval",
     "must be a positive duration"),
    ("zero-generator-period", "StreamApp", {"spec.spark.source.generator.period": "0s"},
     "spec.spark.source.generator.period", "must be a positive duration"),
    ("interval-below-scrape", "ElasticityPolicy", {"spec.evaluationInterval": "2s", "spec.metricsWindow": "1m",
                                                   "spec.metrics.scrapeInterval": "15s"},
     "spec.evaluationInterval", "evaluationInterval must be at least metrics.scrapeInterval"),
    ("stale-below-scrape", "ElasticityPolicy", {"spec.metrics.staleAfter": "5s", "spec.metrics.scrapeInterval": "15s",
                                                "spec.evaluationInterval": "30s"},
     "spec.metrics.staleAfter", "metrics.staleAfter must be at least metrics.scrapeInterval"),
    ("zero-scale-down-delay", "ElasticityPolicy", {"spec.scaleDown.delay": "0s"}, "spec.scaleDown.delay",
     "must be a positive duration"),
    # PromQL and URLs
    ("unbalanced-promql", "ElasticityPolicy", {"spec.metrics.prometheus.queries.inputRate": "sum(rate(x[1m])"},
     "spec.metrics.prometheus.queries.inputRate", "must balance"),
    ("unbalanced-braces", "ElasticityPolicy", {"spec.metrics.prometheus.queries.backlog": 'sum(lag{app="a")'},
     "spec.metrics.prometheus.queries.backlog", "must balance"),
    ("empty-promql", "ElasticityPolicy", {"spec.metrics.prometheus.queries.executors": ""},
     "spec.metrics.prometheus.queries.executors", "at least 1"),
    ("huge-promql", "ElasticityPolicy", {"spec.metrics.prometheus.queries.latencyP99": "x" * 5000},
     "spec.metrics.prometheus.queries.latencyP99", "4096"),
    ("ftp-url", "ElasticityPolicy", {"spec.metrics.prometheus.url": "ftp://prometheus:9090"},
     "spec.metrics.prometheus.url", "should match"),
    ("url-with-space", "ElasticityPolicy", {"spec.metrics.prometheus.url": "http://prom etheus:9090"},
     "spec.metrics.prometheus.url", "should match"),
    # lengths
    ("huge-image", "StreamApp", {"spec.spark.image": "i" * 1_000_000}, "spec.spark.image", "512"),
    ("image-with-space", "StreamApp", {"spec.spark.image": "spark runner:1"}, "spec.spark.image", "should match"),
    ("empty-image", "StreamApp", {"spec.spark.image": ""}, "spec.spark.image", "at least 1"),
    ("huge-checkpoint", "StreamApp", {"spec.spark.checkpointLocation": "/" + "c" * 2000},
     "spec.spark.checkpointLocation", "1024"),
    ("huge-conf-value", "StreamApp", {"spec.spark.conf": {"spark.x": "v" * 5000}}, "spec.spark.conf.spark.x", "4096"),
    ("too-many-conf", "StreamApp", {"spec.spark.conf": {f"spark.k{i}": "v" for i in range(129)}},
     "spec.spark.conf", "128"),
    ("huge-conf-key", "StreamApp", {"spec.spark.conf": {"k" * 300: "v"}}, "spec.spark.conf",
     "conf keys must be 1 to 256 characters"),
    ("huge-arg", "StreamApp", {"spec.spark.application": {"file": "/app.py", "args": ["a" * 5000]}},
     "spec.spark.application.args[0]", "4096"),
    ("too-many-args", "StreamApp", {"spec.spark.application": {"file": "/app.py", "args": ["a"] * 65}},
     "spec.spark.application.args", "64"),
    ("relative-app-file", "StreamApp", {"spec.spark.application": {"file": "app.py"}},
     "spec.spark.application.file", "should match"),
    ("huge-topic", "StreamApp", kafka_source(topic="t" * 300), "spec.spark.source.kafka.topic", "249"),
    ("topic-with-slash", "StreamApp", kafka_source(topic="a/b"), "spec.spark.source.kafka.topic", "should match"),
    ("servers-with-space", "StreamApp", kafka_source(bootstrapServers="a:9092, b:9092"), "spec.spark.source.kafka.bootstrapServers",
     "should match"),
    # names
    ("policy-name-uppercase", "StreamApp", {"spec.policyRef.name": "Latency"}, "spec.policyRef.name", "should match"),
    ("policy-name-unicode-dash", "StreamApp", {"spec.policyRef.name": "latency\u201010s"}, "spec.policyRef.name",
     "should match"),
    ("claim-name-underscore", "StreamApp", {"spec.spark.storage.claimName": "my_claim"},
     "spec.spark.storage.claimName", "should match"),
    ("secret-name-dot-end", "StreamApp", {"spec.spark.attach": {"controlURL": "http://job:9109",
                                                                  "tokenSecretRef": {"name": "tok-"}}},
     "spec.spark.attach.tokenSecretRef.name", "should match"),
    ("nimbus-host-underscore", "StreamApp", storm_app(attach={"nimbusHost": "nim_bus"}),
     "spec.storm.attach.nimbusHost", "should match"),
    # Storm
    ("storm-zero-max-parallelism", "StreamApp", storm_app(maxParallelism={"count": 0}),
     "spec.storm.maxParallelism.count", "greater than or equal to 1"),
    ("storm-parallelism-above-max", "StreamApp", storm_app(parallelism={"count": 8}, maxParallelism={"count": 4}),
     "spec.storm.parallelism", "at most its maxParallelism"),
    ("storm-kafka-source", "StreamApp", storm_app(source={"type": "kafka", "kafka": {"bootstrapServers": "k:9092", "topic": "t"}}),
     "spec.storm.source.type", "generator"),
    ("storm-workers-inverted", "StreamApp", storm_app(workers={"initial": 1, "min": 3, "max": 4}),
     "spec.storm.workers.min", "min must be less than or equal to initial"),
    ("storm-zero-per-worker", "StreamApp", storm_app(executorsPerWorker=0), "spec.storm.executorsPerWorker", "greater than or equal to 1"),
    # a StreamApp's name: its Services (NAME-driver, NAME-zookeeper) must be valid too
    ("streamapp-name-dotted", "StreamApp", {"metadata.name": "word.count"}, "metadata.name", "Invalid value"),
    ("streamapp-name-digit-first", "StreamApp", {"metadata.name": "1wordcount"}, "metadata.name", "Invalid value"),
    ("streamapp-name-too-long", "StreamApp", {"metadata.name": "w" * 54}, "metadata.name", "53"),
    # cross-field
    ("inline-bounds-disjoint", "StreamApp", {"spec.policyRef": DELETE, "spec.policy": {"bounds": {"min": 5, "max": 9}}},
     "spec.policy.bounds", "policy.bounds must overlap spark.executors.min..max"),
    ("storm-inline-bounds-unreachable", "StreamApp", {**storm_app(maxParallelism={"split": 4, "count": 8}),
                                          "spec.policyRef": DELETE, "spec.policy": {"bounds": {"min": 20, "max": 30}}},
     "spec.policy.bounds", "must not exceed every component's storm.maxParallelism"),
    ("inline-policy-invalid", "StreamApp", {"spec.policyRef": DELETE, "spec.policy": {"mode": "yolo"}},
     "spec.policy.mode", "yolo"),
    # pod fields (docs/api.md#pod-fields): the operator's own names, paths and labels stay its own
    ("mount-without-volume", "StreamApp", {"spec.spark.driver.volumeMounts": [{"name": "certs", "mountPath": "/certs"}]},
     "spec.spark.driver.volumeMounts", "must name one of spec.spark.volumes"),
    ("volume-named-data", "StreamApp", {"spec.spark.volumes": [{"name": "data", "emptyDir": {}}]},
     "spec.spark.volumes[0].name", "are the operator's own"),
    ("volume-hostpath", "StreamApp", {"spec.spark.volumes": [{"name": "host", "hostPath": {"path": "/"}}]},
     "spec.spark.volumes[0]", "hostPath"),
    ("volume-two-kinds", "StreamApp", {"spec.spark.volumes": [{"name": "a", "emptyDir": {}, "secret": {"secretName": "b"}}]},
     "spec.spark.volumes[0]", "exactly one of configMap, secret, emptyDir or persistentVolumeClaim"),
    ("mount-over-config", "StreamApp", {"spec.spark.volumes": [{"name": "a", "emptyDir": {}}],
                                        "spec.spark.executor.volumeMounts": [{"name": "a", "mountPath": "/etc/elastream"}]},
     "spec.spark.executor.volumeMounts[0].mountPath", "must not be under"),
    ("env-pod-ip", "StreamApp", {"spec.spark.executor.env": [{"name": "POD_IP", "value": "1.2.3.4"}]},
     "spec.spark.executor.env[0].name", "the operator sets"),
    ("env-value-and-from", "StreamApp", {"spec.spark.driver.env": [
        {"name": "A", "value": "1", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]},
     "spec.spark.driver.env[0].valueFrom", "set value or valueFrom, not both"),
    ("env-from-nothing", "StreamApp", {"spec.spark.driver.envFrom": [{"prefix": "X_"}]},
     "spec.spark.driver.envFrom[0]", "exactly one of secretRef or configMapRef"),
    ("label-of-the-operator", "StreamApp", {"spec.spark.executor.labels": {"elastream.io/app": "other"}},
     "spec.spark.executor.labels", "not under elastream.io/"),
    ("affinity-typo", "StreamApp", {"spec.spark.driver.affinity": {"nodeAfinity": {}}},
     "spec.spark.driver.affinity", "nodeAfinity"),
    ("volume-names-twice", "StreamApp", {"spec.spark.volumes": [{"name": "a", "emptyDir": {}}, {"name": "a", "emptyDir": {}}]},
     "spec.spark.volumes", "volume names must be unique"),
    ("mount-over-spark-conf", "StreamApp", {"spec.spark.volumes": [{"name": "a", "emptyDir": {}}],
                                            "spec.spark.executor.volumeMounts": [{"name": "a", "mountPath": "/opt/spark/conf"}]},
     "spec.spark.executor.volumeMounts[0].mountPath", "must not be under"),
    ("mount-sub-path-up", "StreamApp", {"spec.spark.volumes": [{"name": "a", "emptyDir": {}}],
                                        "spec.spark.driver.volumeMounts": [{"name": "a", "mountPath": "/x", "subPath": "b/../../c"}]},
     "spec.spark.driver.volumeMounts[0].subPath", "no .."),
    ("toleration-exists-with-value", "StreamApp", {"spec.spark.executor.tolerations": [
        {"key": "k", "operator": "Exists", "value": "v"}]},
     "spec.spark.executor.tolerations[0].value", "operator Exists has no value"),
    ("toleration-without-key", "StreamApp", {"spec.spark.executor.tolerations": [{"value": "v"}]},
     "spec.spark.executor.tolerations[0].operator", "without a key needs operator Exists"),
    ("toleration-seconds-no-execute", "StreamApp", {"spec.spark.driver.tolerations": [
        {"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 30}]},
     "spec.spark.driver.tolerations[0].tolerationSeconds", "NoExecute"),
    ("label-value-bad", "StreamApp", {"spec.spark.driver.labels": {"team": "a b"}},
     "spec.spark.driver.labels.team", "should match"),
    ("overhead-fraction", "StreamApp", {"spec.spark.executor.memoryOverhead": "0.5g"},
     "spec.spark.executor.memoryOverhead", "should match"),
    ("claim-and-class", "StreamApp", {"spec.spark.storage": {"claimName": "data", "storageClassName": "nfs"}},
     "spec.spark.storage.storageClassName", "storageClassName applies only"),
]


def malformed(case_id: str) -> tuple[dict[str, Any], str, str]:
    for cid, kind, changes, field, words in MALFORMED:
        if cid == case_id:
            return with_changes(example(kind), changes), field, words
    raise KeyError(case_id)
