"""Nexmark on PySpark, for real: a KRaft Kafka broker (Maven Central's jars), the Nexmark generator writing to it,
each query reading it through elastream's Kafka data source in a local Spark session, and every query's sink checked
against the batch answer over the same generated events (nexmark.reference). q1 also runs in two halves from one
checkpoint: the offsets Spark checkpointed carry on where the first run stopped, with nothing lost or twice."""
from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
import pytest

from kafka_broker.broker import LocalKafka
from nexmark import events as ev
from nexmark import reference
from nexmark.producer import NexmarkProducer, event_times_ms
from spark_apps import sink as sinks
from spark_apps.apps import APPS, AppOptions
from spark_apps.profile import make_profile
from spark_apps.source import KafkaConfig, SourceConfig, load
from spark_apps.verify import sink_batches
from tests.spark.conftest import wait_for

pytestmark = pytest.mark.slow
TOPIC, PARTITIONS, SEED = "nexmark", 4, 11
START_US = 1_767_225_600_000_000  # 2026-01-01: event times are the profile's, not the wall clock's
PROFILE = make_profile("sinusoid", rate=150.0, peak_rate=450.0, period="20s", duration="40s")  # 12,000 events
BATCH = 3_000  # admission control: several micro-batches per query


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    broker = LocalKafka(base_dir=tmp_path_factory.mktemp("kafka")).start()
    broker.create_topic(TOPIC, PARTITIONS)
    yield broker
    broker.stop()


@pytest.fixture(scope="module")
def produced(kafka):
    """Every event of the profile, in the topic (the profile's start is long past: all are due at once)."""
    producer = NexmarkProducer(kafka.bootstrap_servers, TOPIC, PARTITIONS, PROFILE, SEED, START_US)
    half = PROFILE.total() // 2
    producer.send_until(half)  # the first half now, the rest when test_a_restart_continues_from_the_checkpoint says
    producer.flush()
    return producer


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable  # Python data sources are planned in a worker of this Python

    session = (SparkSession.builder.master("local[2]").appName("nexmark-tests")
               .config("spark.sql.shuffle.partitions", "4").config("spark.ui.enabled", "false")
               .config("spark.sql.streaming.noDataProgressEventInterval", "500ms")  # idle is seen at once
               .config("spark.pyspark.python", sys.executable).config("spark.pyspark.driver.python", sys.executable)
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .getOrCreate())
    yield session
    session.stop()


def run_query(spark, kafka, query: str, tmp_path, events: int) -> list[dict]:
    """Run nexmark-<query> into a batch-per-directory sink until it has read `events` events and then run a batch
    with no new input (the one that closes the windows the final watermark passed), then stop it."""
    app = APPS[f"nexmark-{query}"]
    cfg = SourceConfig("kafka", kafka=KafkaConfig(kafka.bootstrap_servers, TOPIC, "earliest"),
                       max_records_per_batch=BATCH)
    out = app.build(load(spark, cfg, 0), AppOptions())
    handle = (out.writeStream.outputMode(app.output_mode).foreachBatch(sinks.writer(str(tmp_path / "sink"),
                                                                                      app.per_batch))
              .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    try:
        wait_for(lambda: _drained(handle, events), 240, f"{query} to read {events} events and go idle", every=0.5)
    finally:
        handle.stop()
    assert handle.exception() is None, handle.exception()
    return sink_batches(str(tmp_path / "sink"))


def _drained(handle, events: int) -> bool:
    """Whether a batch without input came after the one that reached `events` read (a failed query raises)."""
    if handle.exception() is not None:
        raise AssertionError(handle.exception())
    read_all = False
    for progress in handle.recentProgress:
        source = progress["sources"][0]
        offsets = json.loads(source["endOffset"] or "{}").get(TOPIC, {})
        if read_all and progress["numInputRows"] == 0:
            return True
        read_all = read_all or sum(offsets.values()) >= events
    return False


def stream(count: int) -> ev.Events:
    n = np.arange(count, dtype=np.int64)
    return ev.generate(SEED, n, event_times_ms(PROFILE, START_US, n))


def test_a_restart_continues_from_the_checkpoint(spark, kafka, produced, tmp_path):
    first = run_query(spark, kafka, "q1", tmp_path, produced.sent)
    produced.send_until(PROFILE.total())
    produced.flush()
    batches = run_query(spark, kafka, "q1", tmp_path, PROFILE.total())  # the same checkpoint and sink
    assert len(batches) > len(first) >= 2
    check = reference.check("q1", stream(PROFILE.total()), [r for _, rows in batches for r in rows])
    assert check.ok and check.expected > 10_000, check


@pytest.mark.parametrize("query", ["q2", "q3", "q5", "q8"])
def test_every_query_matches_its_batch_answer(spark, kafka, produced, query, tmp_path):
    produced.send_until(PROFILE.total())  # a no-op once the restart test has sent the rest
    produced.flush()
    batches = run_query(spark, kafka, query, tmp_path, PROFILE.total())
    check = reference.check(query, stream(PROFILE.total()), [r for _, rows in batches for r in rows])
    assert check.ok and check.expected > 0, check
    assert len(batches) >= 4, len(batches)  # admission control split the topic into several micro-batches



@pytest.mark.parametrize("query", ["q1", "q2", "q3", "q5", "q8"])
def test_the_record_cost_is_paid_by_queries_that_never_read_seq(spark, query):
    """recordCost holds every row even where the query reads only `value`: it once rode on `seq`, which the
    optimizer pruned from the Nexmark queries, so an executor's capacity was not capped at all."""
    from datetime import datetime, timezone

    from spark_apps.apps import with_record_cost

    cost_s, rows = 0.002, 400
    records = stream(rows)
    when = datetime.fromtimestamp(START_US / 1e6, timezone.utc)
    data = [(int(n), when, value.decode()) for n, value in zip(records.n, ev.to_json(records))]
    df = spark.createDataFrame(data, "seq long, event_time timestamp, value string").coalesce(1)
    out = APPS[f"nexmark-{query}"].build(with_record_cost(df, cost_s), AppOptions())
    assert "BatchEvalPython" in out._jdf.queryExecution().executedPlan().toString()
    started = time.monotonic()
    out.count()
    assert time.monotonic() - started >= rows * cost_s - 0.01  # one partition: every row waited, in turn


def test_the_lag_is_read_from_the_broker_now(kafka, produced):
    """The runner's backlog for Kafka: the broker's high watermarks at scrape time less the offsets processed (what
    arrives while a long batch runs is lag at once, not after the next batch plans)."""
    from spark_apps.kafka_source import Watermarks, lag

    marks = Watermarks(kafka.bootstrap_servers, TOPIC)
    try:
        now = marks()
        assert sorted(now) == [str(p) for p in range(PARTITIONS)]
        high = {p: h for p, (_, h) in now.items()}
        assert sum(high.values()) == produced.sent
        assert lag({}, now, TOPIC) == produced.sent  # nothing processed: every record lags
        assert lag({TOPIC: high}, now, TOPIC) == 0
        assert lag({TOPIC: {"0": high["0"] - 7}}, now, TOPIC) == 7 + sum(high[p] for p in high if p != "0")
    finally:
        marks.close()
