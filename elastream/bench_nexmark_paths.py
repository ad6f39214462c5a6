"""`elastream bench nexmark-paths`: Nexmark q1 and q5 read from Kafka through Spark's own connector
(`format("kafka")`, what a user's application uses) and through elastream's Python Kafka source (what the built-in
Nexmark apps use), side by side: events/s per task slot.

One local Kafka broker holds N seeded Nexmark events (nexmark.events, as the local mode's producer writes them);
each run is a Spark session on `local[1]` (one task slot: one executor core's work) that reads the whole topic
from the earliest offset in micro-batches of at most `batch` records and writes to Spark's `noop` sink, so the
figure is the source, the JSON parse and the query. Throughput = records of every batch but the first (the JVM
warms up in it) / the time from the second batch's start to the last batch's end, from the query's progress.
The runs alternate path by path, `repeats` times; the table shows the median and the spread.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

PATHS = ("connector", "python-source")
QUERIES = ("q1", "q5")
TOPIC, PARTITIONS = "nexmark", 4


@dataclass(frozen=True)
class Run:
    query: str
    path: str
    events_per_s: float
    batches: int


def preload(servers: str, n: int, seed: int) -> None:
    """N Nexmark events into the topic, event n to partition n mod PARTITIONS, stamped 1 ms apart."""
    import numpy as np
    from confluent_kafka import Producer

    from nexmark import events

    producer = Producer({"bootstrap.servers": servers, "linger.ms": 50, "batch.size": 1_000_000, "log_level": 2})
    start_ms = int(time.time() * 1000) - n
    for first in range(0, n, 50_000):
        ns = np.arange(first, min(n, first + 50_000))
        for i, value in zip(ns, events.to_json(events.generate(seed, ns, start_ms + ns))):
            while True:
                try:
                    producer.produce(TOPIC, value, partition=int(i) % PARTITIONS)
                    break
                except BufferError:
                    producer.poll(0.1)
        producer.poll(0)
    if producer.flush(120) != 0:
        raise RuntimeError("the broker did not take every Nexmark event within 120 s")


def session():
    import os
    import sys

    from pyspark.sql import SparkSession

    from spark_apps.jars import kafka_jars
    from spark_apps.kafka_source import KafkaSource

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the Python source's workers import this environment
    spark = (SparkSession.builder.master("local[1]").appName("bench-nexmark-paths")
             .config("spark.jars", ",".join(str(j) for j in kafka_jars()))
             .config("spark.sql.shuffle.partitions", str(PARTITIONS))
             .config("spark.sql.streaming.numRecentProgressUpdates", "10000")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.dataSource.register(KafkaSource)
    return spark


def source(spark, path: str, servers: str, batch: int):
    """The normalised (seq, event_time, value) the Nexmark queries read, through one of the two paths."""
    from pyspark.sql import functions as F

    from spark_apps.kafka_source import FORMAT

    if path == "connector":
        raw = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", servers).option("subscribe", TOPIC)
               .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", str(batch)).load())
        return raw.select(F.col("offset").alias("seq"), F.col("timestamp").alias("event_time"),
                          F.col("value").cast("string").alias("value"))
    return (spark.readStream.format(FORMAT).option("bootstrapServers", servers).option("topic", TOPIC)
            .option("startingOffsets", "earliest").option("maxRecordsPerBatch", str(batch)).load())


def measure(spark, query: str, path: str, servers: str, n: int, batch: int, timeout_s: float) -> Run:
    from spark_apps import nexmark

    build = {"q1": nexmark.q1, "q5": nexmark.q5_counts}[query]
    with tempfile.TemporaryDirectory(prefix="bench-nexmark-") as checkpoint:
        q = (build(source(spark, path, servers, batch)).writeStream.format("noop").outputMode("append")
             .option("checkpointLocation", checkpoint).trigger(processingTime="0 seconds").start())
        try:
            deadline = time.monotonic() + timeout_s
            while sum(p["numInputRows"] for p in q.recentProgress) < n:
                if q.exception() is not None:
                    raise RuntimeError(f"{query} through {path} failed: {q.exception()}")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{query} through {path}: not all {n} events read in {timeout_s:.0f} s")
                time.sleep(0.5)
            progress = [p for p in q.recentProgress if p["numInputRows"] > 0]
        finally:
            q.stop()
    return Run(query, path, _rate(progress), len(progress))


def _rate(progress: list[dict]) -> float:
    """Records per second over every batch but the first, from the batches' start times and durations."""
    from datetime import datetime

    def start(p: dict) -> float:
        return datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp()

    steady = progress[1:] or progress
    end = start(steady[-1]) + steady[-1]["durationMs"]["triggerExecution"] / 1000
    return sum(p["numInputRows"] for p in steady) / max(end - start(steady[0]), 1e-9)


def by_cell(runs: list[Run]) -> dict[tuple[str, str], list[float]]:
    """(query, path) -> the events/s of its runs."""
    return {(q, p): [r.events_per_s for r in runs if (r.query, r.path) == (q, p)] for q in QUERIES for p in PATHS}


def table(runs: list[Run]) -> str:
    cells = by_cell(runs)
    lines = ["| query | path | events/s per task slot (median) | min–max | runs | ratio connector / python-source |",
             "|---|---|---|---|---|---|"]
    for query in QUERIES:
        med = {path: statistics.median(cells[(query, path)]) for path in PATHS}
        for path in PATHS:
            mine = cells[(query, path)]
            ratio = f"{med['connector'] / med['python-source']:.2f}" if path == "connector" else ""
            lines.append(f"| {query} | {path} | {med[path]:,.0f} | {min(mine):,.0f}–{max(mine):,.0f} | {len(mine)} "
                         f"| {ratio} |")
    return "\n".join(lines)


def bench_main(args: argparse.Namespace) -> int:
    """Run the benchmark; the markdown for docs/benchmarks.md is left in args.docs_markdown."""
    from kafka_broker.broker import LocalKafka

    with tempfile.TemporaryDirectory(prefix="bench-kafka-") as work:
        kafka = LocalKafka(Path(work)).start()
        try:
            kafka.create_topic(TOPIC, PARTITIONS)
            servers = kafka.bootstrap_servers
            preload(servers, args.events, args.seed)
            spark = session()
            runs = []
            try:
                for _ in range(args.repeats):
                    for query in QUERIES:
                        for path in PATHS:
                            run = measure(spark, query, path, servers, args.events, args.batch, timeout_s=1800)
                            print(f"{run.query} {run.path}: {run.events_per_s:,.0f} events/s ({run.batches} "
                                  "batches)", flush=True)
                            runs.append(run)
            finally:
                spark.stop()
        finally:
            kafka.stop()
    text = table(runs)
    print(text)
    args.docs_markdown = "\n".join([
        "## Nexmark through Spark's Kafka connector and through elastream's Python Kafka source",
        "",
        f"Command: `elastream bench nexmark-paths --events {args.events} --batch {args.batch} --repeats "
        f"{args.repeats} --docs` ({time.strftime('%Y-%m-%d')}, this 2-core machine). {args.events:,} seeded Nexmark "
        f"events in a {PARTITIONS}-partition topic of a local broker; each run a `local[1]` Spark session (one task "
        f"slot) reading the whole topic from the earliest offset, at most {args.batch:,} records a batch, into Spark's "
        "`noop` sink; events/s over every batch but the first. The runs alternate path by path.",
        "",
        text,
        "",
        reading(runs),
    ])
    return 0


FLINK_PER_CORE = {"q1": 155_000, "q5": 22_000}  # the Flink Nexmark suite's published events/s per core


def reading(runs: list[Run]) -> str:
    """What the table says beside Flink's published per-core figures, and what it does not measure."""
    cells = by_cell(runs)
    best = {q: max(statistics.median(cells[(q, p)]) for p in PATHS) for q in QUERIES}
    versus = "; ".join(f"{q}: {best[q]:,.0f}, {best[q] / FLINK_PER_CORE[q]:.2f} of Flink's {FLINK_PER_CORE[q]:,}"
                       for q in QUERIES)
    overlap = all(min(c) <= max(p) and min(p) <= max(c)
                  for c, p in ((cells[(q, "connector")], cells[(q, "python-source")]) for q in QUERIES))
    verdict = ("The two paths' runs overlap for both queries: neither is faster here, so elastream's own source "
               "stays for the built-in apps and the local mode, and a user's application uses Spark's connector "
               "unchanged." if overlap else "The two paths' runs do not overlap for every query: see the ratios.")
    return ("Beside the Flink Nexmark suite's published figures per core (" + versus + "). A micro-batch pays a "
            "fixed planning and commit cost per batch, and Spark parses each event's JSON (`from_json`) before the "
            "query: q1 is a map, so those costs are most of its time. A task slot is not a core here: the driver "
            "shares the JVM, and elastream's Python source reads Kafka in a Python worker process that can run on "
            "the machine's other core, which flatters its figure beside the connector's, which reads inside the "
            "task. " + verdict)
