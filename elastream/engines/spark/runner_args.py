"""The spark_apps runner's command line for a StreamApp: one builder for the local mode and the driver pod."""
from __future__ import annotations

from elastream.api.streamapp import StreamAppSpec

# the topic the local mode's Nexmark producer writes to (here, not in the nexmark package: the operator's image,
# which builds runner arguments, ships only elastream, elasticity, controllers, spark_apps and storm_apps)
NEXMARK_TOPIC = "nexmark"


def runner_args(name: str, spec: StreamAppSpec, *, master: str, checkpoint: str, sink: str, metrics_port: int,
                control_port: int, token_file: str, bind_address: str = "0.0.0.0", duration_s: float | None = None,
                progress_log: str | None = None, executors: int | None = None,
                nexmark_broker: str | None = None) -> list[str]:
    """Arguments of `python -m spark_apps.runner`. With duration_s the generator's load stops then and the runner
    exits once everything offered is processed (the local mode); without, it runs until stopped (a managed job).
    `executors` is the count to start with (default: spark.executors.initial). `nexmark_broker`: where the local
    mode's Kafka broker holds the Nexmark topic (source type nexmark)."""
    spark = spec.spark
    args = [*_application_args(spec), "--name", name, "--master", master,
            "--checkpoint", checkpoint, "--sink", sink, "--trigger", spark.trigger_interval,
            "--executors", str(executors or spark.executors.initial), "--min-executors", str(spark.executors.min),
            "--max-executors", str(spark.executors.max), "--executor-memory", spark.executor.memory,
            "--executor-cores", str(spark.executor.cores), "--shuffle-partitions", str(spark.max_parallelism),
            "--metrics-port", str(metrics_port), "--control-port", str(control_port),
            "--bind-address", bind_address, "--token-file", token_file]
    args += _source_args(spec, nexmark_broker)
    if duration_s is not None and spec.spark.source.type == "generator":
        args += ["--duration", f"{duration_s}s", "--stop-when-done"]
    if progress_log:
        args += ["--progress-log", progress_log]
    for key, value in spark.conf.items():
        args += ["--conf", f"{key}={value}"]
    return args


def _application_args(spec: StreamAppSpec) -> list[str]:
    """A built-in app by name, or a file with its arguments (`=` keeps an argument that starts with - a value)."""
    application = spec.spark.application
    cost = ["--record-cost", application.record_cost] if application.record_cost else []
    if application.file is None:
        return ["--app", application.builtin, *cost]
    return ["--app-file", application.file, *(f"--app-arg={arg}" for arg in application.args), *cost]


def _source_args(spec: StreamAppSpec, nexmark_broker: str | None) -> list[str]:
    source = spec.spark.source
    if source.type == "nexmark":
        if nexmark_broker is None:
            raise ValueError("spec.spark.source.type: nexmark needs the local mode's broker (elastream run)")
        return ["--source", "kafka", "--kafka-bootstrap-servers", nexmark_broker, "--kafka-topic", NEXMARK_TOPIC,
                "--kafka-starting-offsets", "earliest", *_admission_args(source)]
    if source.type == "kafka":
        k = source.kafka
        return ["--source", "kafka", "--kafka-bootstrap-servers", k.bootstrap_servers, "--kafka-topic", k.topic,
                "--kafka-starting-offsets", k.starting_offsets, *_admission_args(source)]
    gen = source.generator
    args = ["--source", "generator", "--profile", gen.profile, "--rate", str(gen.rate)]
    for flag, value in (("--peak-rate", gen.peak_rate), ("--period", gen.period), ("--trace", gen.trace)):
        if value is not None:
            args += [flag, str(value)]
    return args + _admission_args(source)


def _admission_args(source) -> list[str]:
    return [] if source.max_records_per_trigger is None else ["--max-records-per-batch", str(source.max_records_per_trigger)]
