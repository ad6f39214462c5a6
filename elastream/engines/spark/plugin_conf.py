"""The Spark configuration a user's own application is started with, wherever it runs (elastream run, the
operator's driver pod): elastream's Spark plugin and what in-place rescaling needs. Pure: the operator's image ships
it without the local mode's broker and producer."""
from __future__ import annotations

from spark_apps.in_place import IN_PLACE_CONF

PLUGIN_CLASS = "io.elastream.spark.ElastreamPlugin"  # spark_apps/plugin: on the classpath by spark.jars or the image


def plugin_conf(name: str, spark, metrics_port: int, control_port: int, token_file: str,
                bind_address: str = "127.0.0.1") -> dict[str, str]:
    """The Spark configuration that keeps any Structured Streaming application elastic: the plugin, its
    endpoints, the executor range, the broker it asks for the backlog (a Kafka source); in-place rescaling (dynamic
    allocation off, graceful decommission). spark.executor.instances is the caller's: a restarted driver starts with
    the executors last asked for."""
    kafka = spark.source.kafka if spark.source.type == "kafka" else None
    return {
        "spark.plugins": PLUGIN_CLASS,
        "spark.elastream.app": name,
        "spark.elastream.metrics.port": str(metrics_port),
        "spark.elastream.control.port": str(control_port),
        "spark.elastream.control.tokenFile": token_file,
        "spark.elastream.bindAddress": bind_address,
        **({"spark.elastream.kafka.bootstrapServers": kafka.bootstrap_servers} if kafka else {}),
        "spark.elastream.executors.min": str(spark.executors.min),
        "spark.elastream.executors.max": str(spark.executors.max),
        "spark.executor.cores": str(spark.executor.cores),
        "spark.executor.memory": spark.executor.memory,
        "spark.sql.shuffle.partitions": str(spark.max_parallelism),
        **IN_PLACE_CONF,
    }


def submit_args(application, main_file: str, arguments: list[str]) -> list[str]:
    """spark-submit's arguments after the --conf ones: the main class of a jar, the deps, the main file, and the
    application's own arguments (`arguments`: as the caller expanded them)."""
    deps = application.deps
    out = ["--class", application.main_class] if application.main_class else []
    if deps and deps.py_files:
        out += ["--py-files", ",".join(deps.py_files)]
    if deps and deps.files:
        out += ["--files", ",".join(deps.files)]
    return [*out, main_file, *arguments]
