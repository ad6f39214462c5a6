"""MetricsSource that scrapes the runner's /metrics directly (the local mode, where no Prometheus runs).

It computes the same quantities as the policy's default PromQL: sums of rates and backlog over queries,
the worst busy fraction and latency, the executor count.
"""
from __future__ import annotations

import time
from collections import defaultdict

import requests
from prometheus_client.parser import text_string_to_metric_families

from elastream.engines.base import MetricsUnavailable
from elastream.engines.spark.observation import spark_observation
from elasticity.model import JobObservation


def parse_samples(text: str, app: str) -> dict[str, dict[str, float]]:
    """metric name -> {query label (or "") -> value} for the samples of `app`."""
    return parse_timed_samples(text, app)[0]


def parse_timed_samples(text: str, app: str) -> tuple[dict[str, dict[str, float]], float | None]:
    """The samples of `app` (as parse_samples) and the newest timestamp the exposition gives them (None: none)."""
    out: dict[str, dict[str, float]] = defaultdict(dict)
    newest = None
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.labels.get("app") == app:
                out[s.name][s.labels.get("query", "")] = float(s.value)
                if s.timestamp is not None:
                    newest = max(float(s.timestamp), newest or 0.0)
    return out, newest


def job_values(samples: dict[str, dict[str, float]]) -> dict[str, float | None]:
    """The policy's metric names (inputRate, processingRate, ...) from the runner's samples."""
    def total(name):
        return sum(samples[name].values()) if samples.get(name) else None

    def worst(name):
        return max(samples[name].values()) if samples.get(name) else None

    busy = None
    durations, triggers = samples.get("elastream_batch_duration_seconds", {}), samples.get("elastream_trigger_interval_seconds", {})
    ratios = [durations[q] / triggers[q] for q in durations if triggers.get(q)]
    if ratios:
        busy = max(ratios)
    return {
        "inputRate": total("elastream_input_rate"),
        "processingRate": total("elastream_processing_rate"),
        "busyFraction": busy,
        "latencyP50": worst("elastream_latency_p50_seconds"),
        "latencyP99": worst("elastream_latency_p99_seconds"),
        "backlog": total("elastream_backlog_records"),
        "executors": worst("elastream_executors"),
        "sourcePartitions": worst("elastream_source_partitions"),
    }


class ScrapeMetricsSource:
    def __init__(self, url: str, app: str, max_parallelism: int | None = None, timeout_s: float = 5.0,
                 executor_cores: int = 1):
        self.url, self.app, self.max_parallelism, self.timeout_s = url, app, max_parallelism, timeout_s
        self.executor_cores = executor_cores
        self.last_values: dict[str, float | None] = {}
        self.last_samples: dict[str, dict[str, float]] = {}  # every sample of the app in the last scrape, by name
        self.sampled_at: float | None = None

    def values(self) -> dict[str, float | None]:
        try:
            resp = requests.get(self.url, timeout=self.timeout_s)
            resp.raise_for_status()
        except requests.RequestException as err:
            raise MetricsUnavailable(f"metrics endpoint {self.url} unreachable: {type(err).__name__}") from err
        samples, stamped = parse_timed_samples(resp.text, self.app)
        self.last_samples = samples
        self.last_values, self.sampled_at = job_values(samples), stamped or time.time()
        return self.last_values

    def observe(self, job: str) -> JobObservation:
        """Stamped with the exposition's own sample time when it gives one (a frozen exporter goes stale), else
        with the time of the scrape."""
        values = self.values()
        return spark_observation(job, values, self.sampled_at, self.max_parallelism, self.executor_cores)
