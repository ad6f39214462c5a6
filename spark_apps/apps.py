"""The streaming applications, after HiBench's streaming suite.

Each app turns the normalised input (seq, event_time, value) into the rows the sink stores, in a form that lets
spark_apps.verify check exactly-once from the sink alone:

- identity:    every record as is (seq, event_time_us, value); append.
- repartition: the same after a round-robin shuffle into `partitions` partitions; append.
- wordcount:   running count of every word (stateful); update mode, with the sum of the seqs that hit each word.
- fixwindow:   per fixed event-time window, the count and seq sum of its records (stateful, watermarked); update.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


@dataclass(frozen=True)
class AppOptions:
    partitions: int = 8  # repartition: shuffle target
    window: float = 10.0  # fixwindow: window length, seconds


@dataclass(frozen=True)
class App:
    name: str
    build: Callable[[DataFrame, AppOptions], DataFrame]
    output_mode: str  # append | update
    kind: str  # how verify reads the sink: records | words | windows


def _records(df: DataFrame) -> DataFrame:
    return df.select("seq", F.unix_micros("event_time").alias("event_time_us"), "value")


def _identity(df: DataFrame, _: AppOptions) -> DataFrame:
    return _records(df)


def _repartition(df: DataFrame, opts: AppOptions) -> DataFrame:
    return _records(df.repartition(opts.partitions))


def _wordcount(df: DataFrame, _: AppOptions) -> DataFrame:
    words = df.select(F.explode(F.split("value", " ")).alias("word"), "seq")
    return words.groupBy("word").agg(F.count(F.lit(1)).alias("count"), F.sum("seq").alias("seq_sum"))


def _fixwindow(df: DataFrame, opts: AppOptions) -> DataFrame:
    # event times rise with seq, so a watermark one window behind never drops a record; it lets state of closed
    # windows be evicted so the state stays bounded
    length = f"{int(opts.window * 1000)} milliseconds"
    windows = df.withWatermark("event_time", length).groupBy(F.window("event_time", length))
    return windows.agg(F.count(F.lit(1)).alias("count"), F.sum("seq").alias("seq_sum")).select(
        F.unix_micros("window.start").alias("window_start_us"), "count", "seq_sum")


APPS: dict[str, App] = {
    "identity": App("identity", _identity, "append", "records"),
    "repartition": App("repartition", _repartition, "append", "records"),
    "wordcount": App("wordcount", _wordcount, "update", "words"),
    "fixwindow": App("fixwindow", _fixwindow, "update", "windows"),
}
