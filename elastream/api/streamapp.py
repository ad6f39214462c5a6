"""StreamApp: a streaming job (PySpark Structured Streaming or a Storm topology) that elastream keeps elastic."""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from elastream.api.base import K8S_QUANTITY_PATTERN, NAME_PATTERN, ApiModel, Duration, Rule, keys_rule
from elastream.api.pods import PodSettings, Volume
from elastream.api.policy import URL_PATTERN, ElasticityPolicySpec

# A StreamApp's own name: a DNS-1035 label, since its Services are named after it (NAME-driver, NAME-nimbus,
# NAME-zookeeper), and short enough that the longest of them stays within a label's 63 characters.
STREAMAPP_NAME_PATTERN = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
STREAMAPP_NAME_MAX = 63 - len("-zookeeper")
DATA_PATH = "/var/lib/elastream"  # where the shared volume is mounted in the driver and the executors
BUILTIN_APPS = ("wordcount", "identity", "repartition", "fixwindow")


class Deps(ApiModel):
    """What the application needs beside its main file, as spark-operator's `deps` (spark-submit's --jars,
    --py-files, --files)."""

    jars: list[Annotated[str, Field(min_length=1, max_length=1024)]] = Field(
        default_factory=list, max_length=64, description="jars added to the driver's and executors' classpath")
    py_files: list[Annotated[str, Field(min_length=1, max_length=1024)]] = Field(
        default_factory=list, max_length=64, description=".py, .zip or .egg files put on the PYTHONPATH")
    files: list[Annotated[str, Field(min_length=1, max_length=1024)]] = Field(
        default_factory=list, max_length=64, description="files placed in each executor's working directory")


APP_KINDS = "exactly one of builtin, file or mainApplicationFile must be set"


class Application(ApiModel):
    rules = (
        Rule(
            "(has(self.builtin) ? 1 : 0) + (has(self.file) ? 1 : 0) + (has(self.mainApplicationFile) ? 1 : 0) == 1",
            APP_KINDS,
            lambda a: sum(x is not None for x in (a.builtin, a.file, a.main_application_file)) == 1,
        ),
        Rule("has(self.mainApplicationFile) == has(self.type)",
             "type (Python, Scala or Java) goes with mainApplicationFile, and only with it",
             lambda a: (a.main_application_file is None) == (a.type is None), ".type"),
        Rule("!has(self.type) || (self.type == 'Python') != has(self.mainClass)",
             "mainClass is required for a Scala or Java application, and not used by a Python one",
             lambda a: a.type is None or (a.type == "Python") != (a.main_class is not None), ".mainClass"),
        Rule("has(self.mainApplicationFile) || (size(self.arguments) == 0 && !has(self.deps))",
             "arguments and deps go with mainApplicationFile (a file's build() takes args)",
             lambda a: a.main_application_file is not None or (not a.arguments and a.deps is None), ".arguments"),
    )

    builtin: Literal["wordcount", "identity", "repartition", "fixwindow", "nexmark-q1", "nexmark-q2", "nexmark-q3",
                     "nexmark-q5", "nexmark-q8"] | None = Field(
        None, description="a built-in application from spark_apps (nexmark-*: Nexmark's queries, over a source of "
        "Nexmark events)"
    )
    file: str | None = Field(
        None, min_length=2, max_length=1024, pattern=r"^/",
        description="absolute path of a Python file defining build(df, args) and OUTPUT_MODE (docs/spark_apps.md): "
        f"in the image, or on the shared volume under {DATA_PATH}")
    args: list[Annotated[str, Field(max_length=4096)]] = Field(
        default_factory=list, max_length=64, description="arguments passed to the file's build()")
    type: Literal["Python", "Scala", "Java"] | None = Field(
        None, description="the language of mainApplicationFile, as spark-operator's SparkApplication says it")
    main_application_file: str | None = Field(
        None, min_length=1, max_length=1024, pattern=r"^(local://)?[^\s]+$",
        description="a Spark application as you already run it (docs/your-app.md): a .py file or a jar, unchanged. "
        "local:///path or /path: in the image or on the shared volume; a URL: fetched by spark-submit in the driver "
        "pod (https://; s3a:// or hdfs:// when the image holds that filesystem); a relative path: beside the manifest (the local mode, elastream run)")
    main_class: str | None = Field(None, min_length=1, max_length=512, pattern=r"^[A-Za-z_$][\w$.]*$",
                                   description="the main class of a Scala or Java application")
    arguments: list[Annotated[str, Field(max_length=4096)]] = Field(
        default_factory=list, max_length=256, description="the application's own arguments; $(VAR) is replaced by "
        "the environment variable VAR, as Kubernetes does (elastream run sets KAFKA_BOOTSTRAP_SERVERS and "
        "ELASTREAM_WORKDIR)")
    deps: Deps | None = Field(None, description="jars, pyFiles and files the application needs")
    record_cost: Duration | None = Field(
        None, description="time each input record holds the task that reads it, as a call to an outside service per record "
        "would (it waits, it does not compute), e.g. 250us: one executor core then carries at most 1/recordCost "
        "records/s on any machine. Unset: none")

    @property
    def main_is_url(self) -> bool:
        """mainApplicationFile is a URL spark-submit fetches (https://, s3a://, hdfs://, ...), not a path."""
        f = self.main_application_file or ""
        return "://" in f and not f.startswith("local://")

    @property
    def is_users(self) -> bool:
        """A user's own application (mainApplicationFile), run as it is, instrumented by the plugin."""
        return self.main_application_file is not None


class ExecutorRange(ApiModel):
    rules = (
        Rule("self.min <= self.initial", "min must be less than or equal to initial", lambda r: r.min <= r.initial, ".min"),
        Rule("self.initial <= self.max", "initial must be less than or equal to max", lambda r: r.initial <= r.max, ".initial"),
    )

    initial: int = Field(1, ge=1, le=1000, description="executors at start")
    min: int = Field(1, ge=1, le=1000, description="fewest executors")
    max: int = Field(4, ge=1, le=1000, description="most executors")


class GeneratorSource(ApiModel):
    """The built-in replayable load source: records with an event time and a sequence number."""

    rules = (
        Rule("self.profile != 'trace' || has(self.trace)", "trace is required when profile is trace",
             lambda g: g.profile != "trace" or g.trace is not None, ".trace"),
    )

    profile: Literal["constant", "step", "sinusoid", "trace"] = Field("step", description="shape of the offered rate")
    rate: float = Field(1000.0, gt=0, le=1e9, description="base rate, records/s")
    peak_rate: float | None = Field(None, gt=0, le=1e9, description="rate at the step or the top of the sinusoid")
    period: Duration | None = Field(None, description="step time or sinusoid period")
    trace: str | None = Field(None, min_length=1, max_length=1024,
                              description="CSV file with header time,rate (profile: trace)")


class NexmarkSource(GeneratorSource):
    """Nexmark events (persons, auctions, bids: 1, 3 and 46 of every 50) from the seeded generator, written to a
    Kafka topic at this rate profile (events/s). The local mode (elastream run) starts the broker and the producer."""

    seed: int = Field(1, ge=0, le=2_147_483_647, description="the generator's seed: the same seed, the same events")
    partitions: int = Field(4, ge=1, le=64, description="partitions of the topic: a batch reads with one task each, "
                            "so they bound the useful executors")


class KafkaSource(ApiModel):
    bootstrap_servers: str = Field(..., min_length=1, max_length=4096, pattern=r"^[^\s,]+(,[^\s,]+)*$",
                                   description="host:port[,host:port]")
    topic: str = Field(..., min_length=1, max_length=249, pattern=r"^[a-zA-Z0-9._-]+$", description="topic to read")
    starting_offsets: Literal["earliest", "latest"] = Field("latest")


class Source(ApiModel):
    rules = (
        Rule(
            "self.type != 'kafka' || has(self.kafka)",
            "kafka is required when type is kafka",
            lambda s: s.type != "kafka" or s.kafka is not None,
            ".kafka",
        ),
        Rule(
            "self.type != 'nexmark' || has(self.nexmark)",
            "nexmark is required when type is nexmark",
            lambda s: s.type != "nexmark" or s.nexmark is not None,
            ".nexmark",
        ),
    )

    type: Literal["generator", "kafka", "nexmark"] = Field(
        "generator", description="where records come from (nexmark: the local mode's Kafka broker, fed Nexmark events)")
    generator: GeneratorSource = Field(default_factory=GeneratorSource)
    kafka: KafkaSource | None = None
    nexmark: NexmarkSource | None = None
    max_records_per_trigger: int | None = Field(
        None, ge=1, le=1_000_000_000, description="admission control: the most records one micro-batch reads "
        "(Kafka: maxOffsetsPerTrigger); the rest waits as backlog. Unset: everything offered. Fixed by the checkpoint")


class Storage(ApiModel):
    """The volume shared by the driver and the executors (Spark: checkpoint, written by the executors too, and sink)
    or by the Storm pods (the spout's source state and the sink). Production needs a ReadWriteMany class (NFS,
    CephFS, EFS, Filestore, ...)."""

    rules = (
        Rule("!has(self.claimName) || !has(self.storageClassName)",
             "storageClassName applies only to the claim the operator creates: leave it out with claimName",
             lambda s: s.claim_name is None or s.storage_class_name is None, ".storageClassName"),
    )

    claim_name: str | None = Field(
        None, pattern=NAME_PATTERN, max_length=253,
        description="an existing ReadWriteMany PersistentVolumeClaim; unset: the operator creates <app>-data")
    size: str = Field("1Gi", pattern=K8S_QUANTITY_PATTERN, max_length=32,
                      description="size of the claim the operator creates (read when it is created)")
    storage_class_name: str | None = Field(
        None, min_length=1, max_length=253,
        description="storage class of the claim the operator creates (must offer ReadWriteMany); unset: the default")
    fix_permissions: bool = Field(
        False, description="run an init container as root that gives the app's directory on the volume to the Spark "
                           "and Storm user (uid 185): for volumes that ignore fsGroup, such as hostPath and NFS")


class SecretKeyRef(ApiModel):
    name: str = Field(..., pattern=NAME_PATTERN, max_length=253)
    key: str = Field("token", min_length=1, max_length=253)


class Attach(ApiModel):
    """Attach mode: the Spark job runs elsewhere; elastream only observes and rescales it."""

    control_url: str = Field(..., alias="controlURL", pattern=URL_PATTERN, max_length=2048, description="the runner's control endpoint")
    metrics_url: str | None = Field(None, alias="metricsURL", pattern=URL_PATTERN, max_length=2048, description="the runner's /metrics")
    token_secret_ref: SecretKeyRef = Field(..., description="Secret holding the control endpoint's bearer token")


class SparkSpec(ApiModel):
    rules = (
        keys_rule("conf", 256), keys_rule("node_selector", 317),
        Rule("!has(self.application.builtin) || !self.application.builtin.startsWith('nexmark-') || "
             "self.source.type != 'generator'",
             "a nexmark-* application reads Nexmark events: set source.type to nexmark (or kafka, a topic of them)",
             lambda s: not (s.application.builtin or "").startswith("nexmark-") or s.source.type != "generator",
             ".source.type"),
        *(Rule(f"self.{pod}.volumeMounts.all(m, self.volumes.exists(v, v.name == m.name))",
               f"every {pod}.volumeMounts[].name must name one of spec.spark.volumes",
               lambda s, pod=pod: {m.name for m in getattr(s, pod).volume_mounts} <= {v.name for v in s.volumes},
               f".{pod}.volumeMounts") for pod in ("driver", "executor")),
        Rule("self.volumes.all(v, self.volumes.exists_one(w, w.name == v.name))", "volume names must be unique",
             lambda s: len({v.name for v in s.volumes}) == len(s.volumes), ".volumes"),
    )

    image: str = Field("ghcr.io/elastream/spark-runner:0.1.0", min_length=1, max_length=512, pattern=r"^\S+$",
                       description="image of driver and executors: Spark 4.3 + spark_apps (spark_apps/Dockerfile)")
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = Field(
        "IfNotPresent", description="pull policy of the driver and executor containers")
    application: Application = Field(default_factory=lambda: Application(builtin="wordcount"))
    driver: PodSettings = Field(default_factory=PodSettings, description="the driver pod: resources and pod fields")
    executor: PodSettings = Field(default_factory=PodSettings,
                                  description="every executor pod: resources and pod fields")
    volumes: list[Volume] = Field(
        default_factory=list, max_length=32, description="extra volumes for driver.volumeMounts and "
        "executor.volumeMounts: a configMap, secret, emptyDir or persistentVolumeClaim of the namespace")
    image_pull_secrets: list[Annotated[str, Field(pattern=NAME_PATTERN, max_length=253)]] = Field(
        default_factory=list, max_length=16, description="Secrets of the namespace to pull the image with")
    executors: ExecutorRange = Field(default_factory=ExecutorRange)
    conf: dict[str, Annotated[str, Field(max_length=4096)]] = Field(
        default_factory=dict, max_length=128, description="extra Spark configuration")
    checkpoint_location: str | None = Field(
        None, min_length=1, max_length=1024, description=f"checkpoint directory (default {DATA_PATH}/<app>/checkpoint on the shared "
        "volume; an s3a:// URL works too)")
    trigger_interval: Duration = Field(
        "1s", description="micro-batch trigger interval; longer amortizes the fixed cost of each batch")
    source: Source = Field(default_factory=Source)
    max_parallelism: int = Field(
        16, ge=1, le=10000, description="spark.sql.shuffle.partitions: bounds useful parallelism, pinned by the checkpoint"
    )
    storage: Storage = Field(default_factory=Storage, description=f"the volume mounted at {DATA_PATH} in the driver "
                             "and the executors (managed mode)")
    node_selector: dict[str, Annotated[str, Field(max_length=63)]] = Field(
        default_factory=dict, max_length=64, description="node labels the driver and the executors must be scheduled on")
    attach: Attach | None = Field(None, description="observe and rescale a job started elsewhere")


class WorkerRange(ExecutorRange):
    """Storm workers (JVMs, one per supervisor slot)."""

    initial: int = Field(2, ge=1, le=1000, description="workers at start")
    max: int = Field(4, ge=1, le=1000, description="most workers")


STORM_BUILTIN_APPS = ("wordcount", "pipeline")
Executors = Annotated[int, Field(ge=1, le=10000)]


class StormApplication(ApiModel):
    rules = (
        Rule("self.builtin == 'wordcount' || !has(self.hotWordShare) || self.hotWordShare == 0.0",
             "hotWordShare applies to builtin wordcount (pipeline's aggregate keys on whole sentences, not words)",
             lambda a: a.builtin == "wordcount" or a.hot_word_share == 0.0, ".hotWordShare"),
    )

    builtin: Literal["wordcount", "pipeline"] = Field(
        "wordcount", description="a built-in topology from storm_apps (docs/storm.md): wordcount or pipeline")
    hot_word_share: float = Field(
        0.0, ge=0.0, lt=1.0, description="share of the source's words drawn as one word ('storm'), the rest evenly "
        "from twenty: a hot key for wordcount's count (fields grouping on the word), whose executor then saturates "
        "first. 0: every word alike")

    def generator_args(self, generator: dict) -> dict:
        """The spout's generator arguments: the load profile, and the hot word's share when there is one."""
        return {**generator, "hot_word_share": self.hot_word_share} if self.hot_word_share > 0 else dict(generator)


class StormAttach(ApiModel):
    """Attach mode: the topology runs on a Storm cluster started elsewhere; elastream observes and rebalances it."""

    nimbus_host: str = Field(..., min_length=1, max_length=253, pattern=r"^[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?$",
                             description="Nimbus Thrift host (rebalance goes through Thrift: the UI REST endpoint "
                             "ignores executor and worker counts)")
    nimbus_port: int = Field(6627, ge=1, le=65535, description="Nimbus Thrift port")


class StormSpec(ApiModel):
    rules = (
        Rule("self.source.type == 'generator'", "a Storm app reads the built-in generator source",
             lambda s: s.source.type == "generator", ".source.type"),
        keys_rule("parallelism", 253),
        keys_rule("max_parallelism", 253),
        Rule("self.parallelism.all(k, !(k in self.maxParallelism) || self.parallelism[k] <= self.maxParallelism[k])",
             "parallelism of a component must be at most its maxParallelism",
             lambda s: all(v <= s.max_parallelism.get(k, v) for k, v in s.parallelism.items()), ".parallelism"),
    )

    topology: str | None = Field(
        None, min_length=1, max_length=253, pattern=r"^[A-Za-z0-9_.-]+$",
        description="topology name on Nimbus (default: the StreamApp's name)")
    application: StormApplication = Field(default_factory=StormApplication,
                                          description="what to submit (local and managed mode)")
    source: Source = Field(default_factory=Source, description="the spout's replayable generator and its load profile")
    workers: WorkerRange = Field(default_factory=WorkerRange, description="worker processes (supervisor slots)")
    executors_per_worker: int = Field(
        4, ge=1, le=256, description="workers follow the executors: ceil(total executors / this), within workers")
    parallelism: dict[str, Executors] = Field(
        default_factory=dict, max_length=64, description="per component: executors at submit (default 1)")
    max_parallelism: dict[str, Executors] = Field(
        default_factory=dict, max_length=64,
        description="per component: most executors; the topology is submitted with this many tasks (Storm caps "
        "executors at tasks, silently). Default: the built-in topology's own")
    image: str = Field("ghcr.io/elastream/storm-runner:0.1.0", min_length=1,
                       description="image of the Storm pods (managed mode): Storm 2.8.3 + storm_apps "
                       "(storm_apps/Dockerfile)")
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = Field(
        "IfNotPresent", description="pull policy of the Storm pods (managed mode)")
    slots_per_supervisor: int = Field(
        2, ge=1, le=64, description="worker slots of each supervisor pod (managed mode): supervisors follow the "
        "workers, ceil(workers / this), added before a rebalance that needs them and removed when idle after one")
    storage: Storage = Field(default_factory=Storage, description=f"the volume mounted at {DATA_PATH} in the Storm "
                             "pods (managed mode): the spout's replayable source state and the sink")
    attach: StormAttach | None = Field(None, description="observe and rebalance a topology submitted elsewhere")

    def topology_name(self, app: str) -> str:
        return self.topology or app


class PolicyRef(ApiModel):
    name: str = Field(..., pattern=NAME_PATTERN, max_length=253, description="an ElasticityPolicy in the same namespace")


def _range(spec: "StreamAppSpec") -> ExecutorRange | None:
    section = spec.spark if spec.engine == "spark" else spec.storm
    if section is None:
        return None
    return section.executors if spec.engine == "spark" else section.workers


def _inline_bounds_overlap(spec: "StreamAppSpec") -> bool:
    r = _range(spec)
    bounds = spec.policy.bounds if spec.policy is not None else None
    return r is None or bounds is None or (bounds.min <= r.max and bounds.max >= r.min)


def _storm_bounds_reachable(spec: "StreamAppSpec") -> bool:
    bounds = spec.policy.bounds if spec.policy is not None else None
    caps = spec.storm.max_parallelism if spec.storm is not None else {}
    return bounds is None or not caps or max(caps.values()) >= bounds.min


def _bounds_rule(section: str, range_field: str) -> Rule:
    cel_range = f"self.{section}.{range_field}"
    return Rule(
        f"!has(self.policy) || !has(self.policy.bounds) || !has(self.{section}) || "
        f"(self.policy.bounds.min <= {cel_range}.max && self.policy.bounds.max >= {cel_range}.min)",
        f"policy.bounds must overlap {section}.{range_field}.min..max",
        lambda s: s.engine != section or _inline_bounds_overlap(s), ".policy.bounds")


def _replicas_in_range(spec: "StreamAppSpec") -> bool:
    r = _range(spec)
    return spec.replicas is None or r is None or r.min <= spec.replicas <= r.max


class StreamAppSpec(ApiModel):
    rules = (
        Rule("self.engine != 'spark' || has(self.spark)", "spark is required when engine is spark",
             lambda s: s.engine != "spark" or s.spark is not None, ".spark"),
        Rule("self.engine != 'spark' || !has(self.storm)", "storm must not be set when engine is spark",
             lambda s: s.engine != "spark" or s.storm is None, ".storm"),
        Rule("self.engine != 'storm' || has(self.storm)", "storm is required when engine is storm",
             lambda s: s.engine != "storm" or s.storm is not None, ".storm"),
        Rule("self.engine != 'storm' || !has(self.spark)", "spark must not be set when engine is storm",
             lambda s: s.engine != "storm" or s.spark is None, ".spark"),
        Rule("!(has(self.policyRef) && has(self.policy))", "set policyRef or policy, not both",
             lambda s: not (s.policy_ref is not None and s.policy is not None), ".policy"),
        Rule(
            "!has(self.replicas) || !has(self.spark) || (self.replicas >= self.spark.executors.min"
            " && self.replicas <= self.spark.executors.max)",
            "replicas must be within spark.executors.min and spark.executors.max",
            lambda s: s.engine != "spark" or _replicas_in_range(s), ".replicas"),
        Rule(
            "!has(self.replicas) || !has(self.storm) || (self.replicas >= self.storm.workers.min"
            " && self.replicas <= self.storm.workers.max)",
            "replicas must be within storm.workers.min and storm.workers.max",
            lambda s: s.engine != "storm" or _replicas_in_range(s), ".replicas"),
        _bounds_rule("spark", "executors"),
        Rule("!has(self.policy) || !has(self.policy.bounds) || !has(self.storm) || self.storm.maxParallelism.size() "
             "== 0 || self.storm.maxParallelism.exists(k, self.storm.maxParallelism[k] >= self.policy.bounds.min)",
             "policy.bounds.min must not exceed every component's storm.maxParallelism",
             lambda s: s.engine != "storm" or _storm_bounds_reachable(s), ".policy.bounds"),
    )

    engine: Literal["spark", "storm"] = Field(..., description="spark or storm")
    spark: SparkSpec | None = Field(None, description="the Spark job (engine: spark)")
    storm: StormSpec | None = Field(None, description="the Storm topology (engine: storm)")
    policy_ref: PolicyRef | None = Field(None, description="the ElasticityPolicy to apply")
    policy: ElasticityPolicySpec | None = Field(None, description="an inline policy, instead of policyRef")
    replicas: int | None = Field(
        None, ge=1, le=1000,
        description="desired executors (or workers): written by the autoscaler, or by `kubectl scale` as a manual override",
    )
    suspend: bool = Field(False, description="stop scaling (and, for managed jobs, stop the job) while true")

    def executor_range(self) -> ExecutorRange | None:
        """min/initial/max of the chosen engine's executors (Spark) or workers (Storm)."""
        return _range(self)
