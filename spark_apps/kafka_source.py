"""Kafka as a PySpark streaming source: a Python data source (pyspark.sql.datasource) over confluent-kafka.

Spark's own connector for the pinned PySpark (spark-sql-kafka-0-10_2.13:4.3.0) is not on Maven Central, so the
topic is read from Python. An offset is {topic: {partition: next offset}}, the shape of Spark's Kafka source, so the
runner's backlog (latest minus processed, per partition) and the progress JSON read alike. Spark writes each batch's
end offsets to the checkpoint's offset log before the batch runs and replays exactly that range after a failure: with
the apps' idempotent sinks, every record reaches the output once. No consumer group commits are made; the
checkpoint is the only position.

A batch is one read task per partition with new records. An admission limit (maxRecordsPerBatch) is shared out
across partitions in proportion to what each has waiting, as Spark's maxOffsetsPerTrigger does.
"""
from __future__ import annotations

import datetime as dt
import threading
import time
import uuid

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

FORMAT = "elastream-kafka"
SCHEMA = "seq long, event_time timestamp, value string"
PARTITION_SHIFT = 40  # seq = partition << 40 | offset: unique per record across partitions
STALL_S = 5.0  # a consumer that brings nothing for this long is replaced (librdkafka's fetch can stall)
READ_TIMEOUT_S = 60.0  # a read task fails (and Spark retries it) if its range makes no progress for this long
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


class _PartitionRange(InputPartition):
    def __init__(self, partition: int, start: int, end: int):
        super().__init__((partition, start, end))
        self.partition, self.start, self.end = partition, start, end


def _consumer(servers: str) -> Consumer:
    """A consumer that only reads what it is assigned: its group (librdkafka wants one) is its own and never joined,
    nothing is committed."""
    return Consumer({"bootstrap.servers": servers, "group.id": f"elastream-spark-{uuid.uuid4().hex}",
                     "enable.auto.commit": False, "enable.auto.offset.store": False,
                     # an offset the broker no longer holds (retention deleted it) is an error, never a silent skip
                     "auto.offset.reset": "error",
                     "enable.partition.eof": False, "log_level": 2})


def share_out(waiting: dict[str, int], limit: int) -> dict[str, int]:
    """Records to take per partition when only `limit` may be: proportional to what each has waiting (floors, then the
    remainder one by one to the largest), never more than it has."""
    total = sum(waiting.values())
    if total <= limit:
        return dict(waiting)
    take = {p: w * limit // total for p, w in waiting.items()}
    for p in sorted(waiting, key=lambda q: (-(waiting[q] * limit % total), q))[:limit - sum(take.values())]:
        take[p] += 1
    return take


class Watermarks:
    """A topic's offsets as the broker has them now: partition -> (low, high). One client, made on first use, used
    by one caller at a time (the runner's metrics endpoint may serve two scrapes at once)."""

    def __init__(self, servers: str, topic: str):
        self.servers, self.topic = servers, topic
        self._client: Consumer | None = None
        self._lock = threading.Lock()

    def __call__(self, timeout_s: float = 10.0) -> dict[str, tuple[int, int]]:
        with self._lock:
            return self._read(timeout_s)

    def _read(self, timeout_s: float) -> dict[str, tuple[int, int]]:
        if self._client is None:
            self._client = _consumer(self.servers)
        meta = self._client.list_topics(self.topic, timeout=timeout_s).topics.get(self.topic)
        if meta is None or meta.error is not None:
            raise KafkaException(meta.error if meta is not None else KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))
        return {str(p): self._client.get_watermark_offsets(TopicPartition(self.topic, p), timeout=timeout_s)
                for p in sorted(meta.partitions)}

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def __getstate__(self) -> dict:  # travels without its client and lock
        return {"servers": self.servers, "topic": self.topic}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["servers"], state["topic"])


def lag(processed: dict, watermarks: dict[str, tuple[int, int]], topic: str) -> int:
    """Consumer lag: the records of `topic` after the offsets processed ({topic: {partition: next offset}}), summed
    over its partitions (a partition not read yet lags from its low watermark)."""
    done = processed.get(topic, {})
    return sum(max(0, high - int(done.get(p, low))) for p, (low, high) in watermarks.items())


class KafkaReader(DataSourceStreamReader):
    def __init__(self, servers: str, topic: str, starting: str, max_rows: int | None):
        self.servers, self.topic, self.starting, self.max_rows = servers, topic, starting, max_rows
        self._marks: Watermarks | None = None

    def _watermarks(self) -> dict[str, tuple[int, int]]:
        """partition -> (low, high) offsets, from the broker."""
        if self._marks is None:
            self._marks = Watermarks(self.servers, self.topic)
        return self._marks()

    def initialOffset(self) -> dict:
        marks = self._watermarks()
        return {self.topic: {p: (low if self.starting == "earliest" else high) for p, (low, high) in marks.items()}}

    def getDefaultReadLimit(self):
        return ReadMaxRows(self.max_rows) if self.max_rows else ReadAllAvailable()

    def latestOffset(self, start: dict, limit) -> dict:
        begun = start[self.topic]
        high = {p: max(h, begun.get(p, lo)) for p, (lo, h) in self._watermarks().items()}
        from_ = {p: begun.get(p, 0) for p in high}  # a partition added since: from its start
        if isinstance(limit, ReadMaxRows):
            take = share_out({p: high[p] - from_[p] for p in high}, limit.max_rows)
            high = {p: from_[p] + take[p] for p in high}
        return {self.topic: high}

    def reportLatestOffset(self) -> dict:
        return {self.topic: {p: high for p, (_, high) in self._watermarks().items()}}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        begun = start[self.topic]
        ends = sorted(end[self.topic].items(), key=lambda item: int(item[0]))
        return [_PartitionRange(int(p), begun.get(p, 0), e) for p, e in ends if e > begun.get(p, 0)]

    def read(self, partition: _PartitionRange):
        """The records [start, end) of one partition, in offset order. A consumer that brings nothing for
        STALL_S is replaced by a new one at the same offset; the task fails after READ_TIMEOUT_S without progress."""
        at, last_progress = partition.start, time.monotonic()
        while at < partition.end:
            consumer = _consumer(self.servers)
            try:
                consumer.assign([TopicPartition(self.topic, partition.partition, at)])
                stalled_since = time.monotonic()
                while at < partition.end and time.monotonic() - stalled_since < STALL_S:
                    for m in consumer.consume(min(10_000, partition.end - at), timeout=0.5):
                        if m.error() is not None:
                            raise KafkaException(f"Kafka {self.topic}[{partition.partition}] at offset {at}: "
                                                 f"{m.error().str()} (records lost to retention?)")
                        if m.offset() >= partition.end:
                            at = partition.end
                            break
                        at, stalled_since = m.offset() + 1, time.monotonic()
                        last_progress = stalled_since
                        _, ts_ms = m.timestamp()
                        value = m.value()
                        yield ((partition.partition << PARTITION_SHIFT) | m.offset(),
                               _EPOCH + dt.timedelta(milliseconds=ts_ms),
                               value.decode() if value is not None else None)
            finally:
                consumer.close()
            if at < partition.end and time.monotonic() - last_progress > READ_TIMEOUT_S:
                raise TimeoutError(f"Kafka {self.topic}[{partition.partition}]: offsets {at}..{partition.end} "
                                   f"did not arrive within {READ_TIMEOUT_S:.0f}s")

    def __getstate__(self) -> dict:  # read() runs in a Python worker: the driver's client stays behind
        return {**self.__dict__, "_marks": None}

    def stop(self) -> None:
        if self._marks is not None:
            self._marks.close()
            self._marks = None


class KafkaSource(DataSource):
    """Options: bootstrapServers, topic (required), startingOffsets (earliest | latest), maxRecordsPerBatch."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema) -> KafkaReader:
        o = self.options
        max_rows = int(o["maxRecordsPerBatch"]) if o.get("maxRecordsPerBatch") else None
        return KafkaReader(o["bootstrapServers"], o["topic"], o.get("startingOffsets", "latest"), max_rows)
