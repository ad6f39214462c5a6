"""Turn the Storm exporter's per-component series (storm_apps.exporter) into the core's JobObservation: one stage
per component, in topological order, each with its own parallelism (executors) and upstream components.

The same series come from Prometheus (the operator: one vector query per metric, by `component`) or straight
from the exporter's /metrics (the local mode). Both paths end in `storm_observation`.
"""
from __future__ import annotations

import math
import time
from collections import defaultdict

import requests
from prometheus_client.parser import text_string_to_metric_families

from elastream.engines.base import MetricsUnavailable
from elastream.engines.prometheus import PrometheusClient
from elasticity.model import JobObservation, StageMetrics

# metric key -> exporter series (labels app, component)
SERIES = {
    "executors": "elastream_storm_executors",
    "tasks": "elastream_storm_tasks",
    "inputRate": "elastream_storm_input_rate",
    "processingRate": "elastream_storm_processing_rate",
    "emitRate": "elastream_storm_emit_rate",
    "ackRate": "elastream_storm_ack_rate",
    "busyFraction": "elastream_storm_busy_fraction",
    "busyFractionMax": "elastream_storm_busy_fraction_max",
    "executeLatency": "elastream_storm_execute_latency_seconds",
    "completeLatency": "elastream_storm_complete_latency_seconds",
    "backlog": "elastream_storm_backlog_records",
    "pending": "elastream_storm_pending_tuples",
}
INFO = "elastream_storm_component_info"
REQUIRED = ("executors", "inputRate", "processingRate", "busyFraction")
# what storm_observation reads (the rest serve the local mode's progress lines and dashboards)
OBSERVED = (*REQUIRED, "busyFractionMax", "tasks", "emitRate", "completeLatency", "backlog")


def queries(app: str) -> dict[str, str]:
    """The PromQL the operator sends for a Storm app: one vector per metric it reads, one series per component."""
    return {key: f'max by (component) ({SERIES[key]}{{app="{app}"}})' for key in OBSERVED}


def storm_observation(job: str, values: dict[str, dict[str, float]], info: dict[str, tuple[str, tuple[str, ...]]],
                      timestamp: float, max_parallelism: dict[str, int]) -> JobObservation:
    """values: metric key -> {component: value}; info: component -> (kind, upstream components)."""
    if not info:
        raise MetricsUnavailable(f"no component of topology {job} is exported yet ({INFO} is empty)")
    stages, gaps = [], []
    for name in topological(info):
        kind, upstream = info[name]
        v = {key: values.get(key, {}).get(name) for key in OBSERVED}
        missing = [k for k in REQUIRED if not _finite(v[k])]
        if missing:
            gaps.append(f"{name}: {', '.join(missing)}")
            continue
        caps = [c for c in (max_parallelism.get(name), _int(v["tasks"])) if c]
        stages.append(StageMetrics(
            name=name, parallelism=int(round(v["executors"])), upstream=upstream,
            input_rate=v["inputRate"], processing_rate=v["processingRate"], busy_fraction=v["busyFraction"],
            # a bolt's busiest executor: a hot key (fields grouping) saturates it while the mean looks idle
            busy_fraction_max=v["busyFractionMax"] if kind != "spout" and _finite(v["busyFractionMax"]) else None,
            output_rate=v["emitRate"] if _finite(v["emitRate"]) else None,
            backlog=float(v["backlog"]) if kind == "spout" and _finite(v["backlog"]) else 0.0,
            max_parallelism=min(caps) if caps else None))
    if gaps:
        raise MetricsUnavailable(f"no value for {'; '.join(gaps)} of {job}")
    latencies = [values.get("completeLatency", {}).get(n) for n, (kind, _) in info.items() if kind == "spout"]
    latencies = [x for x in latencies if _finite(x)]
    return JobObservation(job=job, timestamp=timestamp, stages=stages,
                          latency_avg_s=max(latencies) if latencies else None)


def topological(info: dict[str, tuple[str, tuple[str, ...]]]) -> list[str]:
    """Components with every upstream before them (spouts first); ties by name, so the order is stable."""
    done: list[str] = []
    left = dict(info)
    while left:
        ready = sorted(n for n, (_, up) in left.items() if all(u in done or u not in info for u in up))
        if not ready:  # a cycle (Storm allows them): keep the rest by name
            ready = sorted(left)
        for n in ready:
            done.append(n)
            left.pop(n)
    return done


def info_from_labels(series: list[dict[str, str]]) -> dict[str, tuple[str, tuple[str, ...]]]:
    out = {}
    for labels in series:
        if "component" in labels:
            upstream = tuple(u for u in (labels.get("upstream") or "").split(",") if u)
            out[labels["component"]] = (labels.get("kind", "bolt"), upstream)
    return out


class PrometheusStormSource:
    """MetricsSource over Prometheus for the operator."""

    def __init__(self, prometheus: PrometheusClient, app: str, max_parallelism: dict[str, int]):
        self.prometheus, self.app, self.max_parallelism = prometheus, app, dict(max_parallelism)

    def observe(self, job: str) -> JobObservation:
        values = {key: self.prometheus.vector(q, "component") for key, q in queries(self.app).items()}
        info = info_from_labels(self.prometheus.series(f'{INFO}{{app="{self.app}"}}'))
        # stamped with the newest sample's own time: a frozen exporter goes stale (an instant query is always "now")
        sampled = self.prometheus.scalar(f'max(timestamp({SERIES["executors"]}{{app="{self.app}"}}))')
        return storm_observation(job, values, info, sampled if _finite(sampled) else time.time(), self.max_parallelism)


class ScrapeStormSource:
    """MetricsSource that reads the exporter's /metrics directly (the local mode: no Prometheus runs)."""

    def __init__(self, url: str, app: str, max_parallelism: dict[str, int], timeout_s: float = 5.0):
        self.url, self.app, self.max_parallelism, self.timeout_s = url, app, dict(max_parallelism), timeout_s

    def read(self) -> tuple[dict[str, dict[str, float]], dict[str, tuple[str, tuple[str, ...]]]]:
        try:
            resp = requests.get(self.url, timeout=self.timeout_s)
            resp.raise_for_status()
        except requests.RequestException as err:
            raise MetricsUnavailable(f"Storm exporter {self.url} unreachable: {type(err).__name__}") from err
        return parse_exporter(resp.text, self.app)

    def observe(self, job: str) -> JobObservation:
        values, info = self.read()
        return storm_observation(job, values, info, time.time(), self.max_parallelism)


def parse_exporter(text: str, app: str) -> tuple[dict[str, dict[str, float]], dict[str, tuple[str, tuple[str, ...]]]]:
    by_series = {series: key for key, series in SERIES.items()}
    values: dict[str, dict[str, float]] = defaultdict(dict)
    info_labels = []
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.labels.get("app") != app:
                continue
            if s.name == INFO or s.name == INFO + "_info":
                info_labels.append(s.labels)
            elif s.name in by_series and "component" in s.labels:
                values[by_series[s.name]][s.labels["component"]] = float(s.value)
    return dict(values), info_from_labels(info_labels)


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def _int(x) -> int | None:
    return int(round(x)) if _finite(x) and x > 0 else None
