"""Turn the runner's per-job metrics into the core's JobObservation.

A Spark job has one parallelism knob, its executors, shared by all its stages; the core sees it as one
stage named "executors" whose parallelism is the executor count.
"""
from __future__ import annotations

import math
import time

from elastream.engines.base import MetricsUnavailable
from elastream.engines.prometheus import PrometheusClient
from elasticity.model import JobObservation, StageMetrics

SPARK_STAGE = "executors"
REQUIRED = ("inputRate", "processingRate", "busyFraction", "executors")


def wall_clock_processing_rate(values: dict[str, float | None]) -> float | None:
    """Records processed per second of wall-clock time.

    Spark's processedRowsPerSecond (the runner's elastream_processing_rate) divides a batch's rows by the batch's
    own duration: it is already a rate *while busy*. The core, like DS2, wants rows per wall-clock second and
    divides by the busy fraction itself, so convert: rows/batch-second × batch-seconds/wall-second.
    """
    rate, busy = values.get("processingRate"), values.get("busyFraction")
    if not (_finite(rate) and _finite(busy)):
        return None
    return float(rate) * min(max(float(busy), 0.0), 1.0)


def spark_observation(job: str, values: dict[str, float | None], timestamp: float,
                      max_parallelism: int | None, executor_cores: int = 1) -> JobObservation:
    """values: metric name (the policy's query keys: inputRate, processingRate, ...) -> value or None. A Kafka
    source's partition count (sourcePartitions) bounds the useful executors: a batch reads with one task per
    partition, so executors past ceil(partitions / cores) would sit idle."""
    missing = [k for k in REQUIRED if not _finite(values.get(k))]
    if missing:
        raise MetricsUnavailable(f"no value for {', '.join(missing)} of {job}")
    executors = int(round(values["executors"]))
    stage = StageMetrics(
        name=SPARK_STAGE,
        parallelism=executors,
        input_rate=values["inputRate"],
        processing_rate=wall_clock_processing_rate(values),
        busy_fraction=values["busyFraction"],
        latency_p50_s=_or_none(values.get("latencyP50")),
        latency_p99_s=_or_none(values.get("latencyP99")),
        backlog=_or_none(values.get("backlog")) or 0.0,
        max_parallelism=partition_bound(max_parallelism, values.get("sourcePartitions"), executor_cores),
    )
    return JobObservation(job=job, timestamp=timestamp, stages=[stage],
                          latency_p50_s=stage.latency_p50_s, latency_p99_s=stage.latency_p99_s)


def partition_bound(max_parallelism: int | None, partitions: float | None, executor_cores: int) -> int | None:
    """The spec's max parallelism, lowered to the executors a Kafka source's partitions can keep busy."""
    if not _finite(partitions) or partitions < 1:
        return max_parallelism
    bound = max(1, math.ceil(partitions / max(1, executor_cores)))
    return bound if max_parallelism is None else min(max_parallelism, bound)


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def _or_none(x):
    return float(x) if _finite(x) else None


class PrometheusSparkSource:
    """MetricsSource over Prometheus: one instant query per metric, PromQL from the policy (`{app}` placeholders)."""

    def __init__(self, prometheus: PrometheusClient, queries: dict[str, str], app: str,
                 max_parallelism: int | None = None, executor_cores: int = 1):
        self.prometheus = prometheus
        self.queries = {name: q.replace("{app}", app) for name, q in queries.items()}
        self.max_parallelism, self.executor_cores = max_parallelism, executor_cores

    def observe(self, job: str) -> JobObservation:
        """Raises MetricsUnavailable when Prometheus cannot be reached or required series are missing.

        The observation is stamped with the newest sample's own time (the `sampleTime` query), so that the core's
        staleness guard sees a frozen or lagging exporter; without that query, with the time of the queries."""
        values = {name: self.prometheus.scalar(q) for name, q in self.queries.items()}
        sampled = values.pop("sampleTime", None)
        return spark_observation(job, values, sampled if _finite(sampled) else time.time(), self.max_parallelism,
                                 self.executor_cores)
