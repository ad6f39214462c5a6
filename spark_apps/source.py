"""Where records come from: the replayable load generator or a Kafka topic (both PySpark Python data sources; Kafka's
in spark_apps.kafka_source).

Both are normalised to the columns (seq long, event_time timestamp, value string) the apps read.

The generator is a pure function of (profile, start time): its offset is the number of records offered so far, the
offered count at wall-clock time t is floor(F(t - start)), and record `seq` carries the event time at which the
profile offered it. Replaying a micro-batch after a crash therefore regenerates exactly the same records, and the
backlog (offered but not yet read) is a real, growing queue when the job falls behind.
"""
from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from spark_apps import records
from spark_apps.kafka_source import FORMAT as KAFKA_FORMAT, KafkaSource
from spark_apps.profile import RateProfile, make_profile

FORMAT = "elastream-generator"
SCHEMA = "seq long, event_time timestamp, value string"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


@dataclass
class GeneratorConfig:
    """The StreamApp `spark.source.generator` fields, plus how the runner drives it."""

    profile: str = "constant"
    rate: float = 1000.0
    peak_rate: float | None = None
    period: str | None = None
    trace: str | None = None
    duration: str | None = None  # stop offering after this long; makes the produced total exact

    def build(self) -> RateProfile:
        return make_profile(self.profile, self.rate, self.peak_rate, self.period, self.trace, self.duration)


@dataclass
class KafkaConfig:
    """The StreamApp `spark.source.kafka` fields."""

    bootstrap_servers: str
    topic: str
    starting_offsets: str = "latest"


@dataclass
class SourceConfig:
    type: str = "generator"  # generator | kafka
    generator: GeneratorConfig = field(default_factory=GeneratorConfig)
    kafka: KafkaConfig | None = None
    partitions: int = 4  # read tasks per micro-batch (generator)
    max_records_per_batch: int | None = None  # admission control: without it a batch takes everything offered


class _Range(InputPartition):
    def __init__(self, start: int, end: int):
        super().__init__((start, end))
        self.start, self.end = start, end


class GeneratorReader(DataSourceStreamReader):
    """Offsets are {"seq": records offered}; batches are seq ranges split into `partitions` read tasks."""

    def __init__(self, profile: RateProfile, start_us: int, partitions: int, max_rows: int | None):
        self.profile, self.start_us, self.partitions_n, self.max_rows = profile, start_us, partitions, max_rows

    def _offered_now(self) -> int:
        return self.profile.offered_count(time.time() - self.start_us / 1e6)

    def initialOffset(self) -> dict:
        return {"seq": 0}

    def getDefaultReadLimit(self):
        return ReadMaxRows(self.max_rows) if self.max_rows else ReadAllAvailable()

    def latestOffset(self, start: dict, limit) -> dict:
        end = max(self._offered_now(), start["seq"])
        if isinstance(limit, ReadMaxRows):
            end = min(end, start["seq"] + limit.max_rows)
        return {"seq": end}

    def reportLatestOffset(self) -> dict:
        return {"seq": self._offered_now()}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        s, e = start["seq"], end["seq"]
        cuts = np.linspace(s, e, min(self.partitions_n, max(e - s, 0)) + 1).astype(int) if e > s else []
        return [_Range(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]

    def read(self, partition: _Range):
        seq = np.arange(partition.start, partition.end, dtype=np.int64)
        times = records.event_time_us(self.profile, self.start_us, seq)
        for s, t, line in zip(seq.tolist(), times.tolist(), records.lines(seq)):
            yield s, _EPOCH + dt.timedelta(microseconds=t), line


class GeneratorSource(DataSource):
    """Options: profile, rate, peakRate, period, trace, duration, startUs (required), partitions, maxRecordsPerBatch."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema) -> GeneratorReader:
        o = self.options
        cfg = GeneratorConfig(
            profile=o.get("profile", "constant"), rate=float(o.get("rate", 1000)),
            peak_rate=float(o["peakRate"]) if o.get("peakRate") else None,
            period=o.get("period") or None, trace=o.get("trace") or None, duration=o.get("duration") or None,
        )
        max_rows = int(o["maxRecordsPerBatch"]) if o.get("maxRecordsPerBatch") else None
        return GeneratorReader(cfg.build(), int(o["startUs"]), int(o.get("partitions", 4)), max_rows)


def generator_options(cfg: SourceConfig, start_us: int) -> dict[str, str]:
    g = cfg.generator
    opts = {"profile": g.profile, "rate": str(g.rate), "startUs": str(start_us), "partitions": str(cfg.partitions)}
    for key, value in (("peakRate", g.peak_rate), ("period", g.period), ("trace", g.trace), ("duration", g.duration),
                       ("maxRecordsPerBatch", cfg.max_records_per_batch)):
        if value is not None:
            opts[key] = str(value)
    return opts


def load(spark: SparkSession, cfg: SourceConfig, start_us: int) -> DataFrame:
    """The streaming input as (seq, event_time, value)."""
    if cfg.type == "generator":
        spark.dataSource.register(GeneratorSource)
        return spark.readStream.format(FORMAT).options(**generator_options(cfg, start_us)).load()
    if cfg.type == "kafka":
        if cfg.kafka is None:
            raise ValueError("source kafka needs bootstrap servers and a topic")
        spark.dataSource.register(KafkaSource)
        opts = {"bootstrapServers": cfg.kafka.bootstrap_servers, "topic": cfg.kafka.topic,
                "startingOffsets": cfg.kafka.starting_offsets}
        if cfg.max_records_per_batch:
            opts["maxRecordsPerBatch"] = str(cfg.max_records_per_batch)
        return spark.readStream.format(KAFKA_FORMAT).options(**opts).load()
    raise ValueError(f"unknown source type {cfg.type!r} (generator or kafka)")
