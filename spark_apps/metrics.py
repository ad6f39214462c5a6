"""Driver-side metrics: a StreamingQueryListener turns each micro-batch's progress into Prometheus gauges.

End-to-end latency is measured, not estimated: the input is `observe`d, so each batch reports the 1st and 50th
percentile of its records' event times; every record of a batch reaches the sink when the batch commits
(timestamp + batchDuration), so latency p99 = commit - q01 and p50 = commit - q50.
Backlog and executors are read live at scrape time.
"""
from __future__ import annotations

import datetime as dt
import json
import logging
import os
import threading
from typing import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQueryListener

log = logging.getLogger(__name__)
OBSERVATION = "elastream_input"
LABELS = ("app", "query")


def observe_input(df: DataFrame) -> DataFrame:
    """Attach per-batch event-time statistics of the input (computed in the same pass as the query)."""
    micros = F.unix_micros("event_time")
    return df.observe(OBSERVATION, F.count(F.lit(1)).alias("rows"),
                      F.percentile_approx(micros, [0.01, 0.5], 10000).alias("q"))


class Metrics:
    """The gauges of one runner. `backlog` and `executors` are callables evaluated at each scrape."""

    def __init__(self, app: str, trigger_seconds: float, backlog: Callable[[str], int | None],
                 executors: Callable[[], tuple[int, int]], progress_log: str | None = None,
                 task_seconds: Callable[[], dict[str, float]] | None = None):
        self.app, self.trigger_seconds, self._backlog, self._executors = app, trigger_seconds, backlog, executors
        self._task_seconds = task_seconds
        self.registry = CollectorRegistry()
        g = lambda name, doc: Gauge(name, doc, LABELS, registry=self.registry)  # noqa: E731
        self.input_rate = g("elastream_input_rate", "records/s offered to the query (Spark inputRowsPerSecond)")
        self.processing_rate = g("elastream_processing_rate", "records/s processed (Spark processedRowsPerSecond)")
        self.batch_duration = g("elastream_batch_duration_seconds", "duration of the last micro-batch")
        self.trigger_interval = g("elastream_trigger_interval_seconds", "configured trigger interval")
        self.latency_p50 = g("elastream_latency_p50_seconds", "end-to-end latency, event time to sink, median")
        self.latency_p99 = g("elastream_latency_p99_seconds", "end-to-end latency, event time to sink, 99th pct")
        self.state_rows = g("elastream_state_rows", "rows in the state stores")
        self.state_bytes = g("elastream_state_bytes", "memory used by the state stores")
        self.batch_id = g("elastream_batch_id", "id of the last completed micro-batch")
        self.records = Counter("elastream_records_processed", "records read by completed batches", LABELS,
                               registry=self.registry)
        self.batches = Counter("elastream_batches", "completed micro-batches", LABELS, registry=self.registry)
        self.registry.register(_LiveCollector(self))
        self.queries: set[str] = set()
        self.last: dict[str, dict] = {}
        self._log_lock = threading.Lock()
        self._log = open(progress_log, "a", buffering=1) if progress_log else None

    def serve(self, port: int, addr: str = "0.0.0.0") -> None:
        start_http_server(port, addr=addr, registry=self.registry)

    def on_progress(self, p) -> None:
        """Update the gauges from one StreamingQueryProgress."""
        query = p.name or str(p.id)
        self.queries.add(query)
        labels = {"app": self.app, "query": query}
        rows = int(p.numInputRows)
        self.input_rate.labels(**labels).set(float(p.inputRowsPerSecond or 0.0))
        self.processing_rate.labels(**labels).set(float(p.processedRowsPerSecond or 0.0))
        self.batch_duration.labels(**labels).set(p.batchDuration / 1000.0)
        self.trigger_interval.labels(**labels).set(self.trigger_seconds)
        self.state_rows.labels(**labels).set(sum(s.numRowsTotal for s in p.stateOperators))
        self.state_bytes.labels(**labels).set(sum(s.memoryUsedBytes for s in p.stateOperators))
        self.batch_id.labels(**labels).set(p.batchId)
        self.records.labels(**labels).inc(rows)
        self.batches.labels(**labels).inc()
        committed_us = _iso_micros(p.timestamp) + p.batchDuration * 1000
        latency = _latencies(p.observedMetrics.get(OBSERVATION), committed_us)
        if latency:
            self.latency_p50.labels(**labels).set(latency[0])
            self.latency_p99.labels(**labels).set(latency[1])
        summary = {
            "time": committed_us / 1e6, "query": query, "batch": p.batchId, "rows": rows,
            "input_rate": float(p.inputRowsPerSecond or 0.0), "processing_rate": float(p.processedRowsPerSecond or 0.0),
            "batch_duration": p.batchDuration / 1000.0, "latency_p50": latency[0] if latency else None,
            "latency_p99": latency[1] if latency else None,
            "end_offsets": [s.endOffset for s in p.sources], "latest_offsets": [s.latestOffset for s in p.sources],
            "state_rows": sum(s.numRowsTotal for s in p.stateOperators),
            "duration_ms": dict(p.durationMs),
        }
        self.last[query] = summary
        if self._log:
            try:
                summary["executors"] = self._executors()[0]
            except Exception:  # noqa: BLE001 - the driver may be restarting; the log line still matters
                summary["executors"] = None
            with self._log_lock:
                self._log.write(json.dumps(summary) + "\n")


def source_partitions(latest_offsets: list[str | None]) -> int | None:
    """Partitions of the Kafka topics in a progress's latest offsets ({topic: {partition: offset}} JSON per source);
    None for a source without partitions (the generator's {"seq": n})."""
    count = 0
    for offsets in latest_offsets:
        try:
            parsed = json.loads(offsets) if offsets else {}
        except ValueError:
            continue
        count += sum(len(parts) for parts in parsed.values() if isinstance(parts, dict))
    return count or None


class _LiveCollector:
    """Backlog and executors, read when Prometheus scrapes rather than once per batch."""

    def __init__(self, metrics: Metrics):
        self.m = metrics

    def collect(self):
        backlog = GaugeMetricFamily("elastream_backlog_records", "records offered but not yet read", labels=LABELS)
        for query in sorted(self.m.queries):
            value = _safe(lambda: self.m._backlog(query))
            if value is not None:
                backlog.add_metric([self.m.app, query], value)
        yield backlog
        partitions = GaugeMetricFamily("elastream_source_partitions", "Kafka partitions the query reads: at most "
                                       "that many read tasks per batch", labels=LABELS)
        for query in sorted(self.m.queries):
            count = source_partitions(self.m.last.get(query, {}).get("latest_offsets") or [])
            if count:
                partitions.add_metric([self.m.app, query], count)
        yield partitions
        counts = _safe(self.m._executors)
        if counts is not None:
            current, target = counts
            yield _family("elastream_executors", "executors registered with the driver", self.m.app, current)
            yield _family("elastream_executor_target", "executors asked for", self.m.app, target)
        per_executor = _safe(self.m._task_seconds) if self.m._task_seconds else None
        if per_executor:
            busy = CounterMetricFamily("elastream_executor_task_seconds", "task time each executor has run (its "
                                       "load in cores, as a rate)", labels=["app", "executor"])
            for executor, seconds in sorted(per_executor.items()):
                busy.add_metric([self.m.app, executor], seconds)
            yield busy


def _family(name: str, doc: str, app: str, value: float) -> GaugeMetricFamily:
    fam = GaugeMetricFamily(name, doc, labels=["app"])
    fam.add_metric([app], value)
    return fam


def _safe(fn):
    try:
        return fn()
    except Exception:  # noqa: BLE001 - a scrape during a driver restart must not fail the whole page
        log.debug("live metric unavailable", exc_info=True)
        return None


def _iso_micros(stamp: str) -> int:
    t = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return int(round(t.timestamp() * 1e6))


def _latencies(observed, committed_us: int) -> tuple[float, float] | None:
    """(p50, p99) seconds from the observed event-time percentiles, or None for an empty batch."""
    if observed is None or not observed["rows"] or observed["q"] is None:
        return None
    q01, q50 = observed["q"]
    return (committed_us - q50) / 1e6, (committed_us - q01) / 1e6


class Listener(StreamingQueryListener):
    def __init__(self, metrics: Metrics):
        self.metrics = metrics

    def onQueryStarted(self, event) -> None:
        log.info("query %s started (run %s)", event.name, event.runId)

    def onQueryProgress(self, event) -> None:
        try:
            self.metrics.on_progress(event.progress)
        except Exception:  # noqa: BLE001 - a listener exception would be swallowed by py4j anyway; log it
            log.exception("progress not exported")

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        log.info("query %s terminated%s", event.id, f": {event.exception}" if event.exception else "")


def planned_end(checkpoint: str) -> dict | None:
    """The end offset of the newest batch Spark planned (written to the offsets log before the batch runs)."""
    offsets = os.path.join(checkpoint, "offsets")
    try:
        ids = [int(n) for n in os.listdir(offsets) if n.isdigit()]
        if not ids:
            return None
        with open(os.path.join(offsets, str(max(ids)))) as f:
            lines = f.read().splitlines()
        return json.loads(lines[2]) if len(lines) > 2 else None
    except (OSError, ValueError):
        return None
