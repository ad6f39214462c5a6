"""The streaming applications, after HiBench's streaming suite.

Each app turns the normalised input (seq, event_time, value) into the rows the sink stores, in a form that lets
spark_apps.verify check exactly-once from the sink alone:

- identity:    every record as is (seq, event_time_us, value); append.
- repartition: the same after a round-robin shuffle into `partitions` partitions; append.
- wordcount:   running count of every word (stateful); update mode, with the sum of the seqs that hit each word.
- fixwindow:   per fixed event-time window, the count and seq sum of its records (stateful, watermarked); update.
- nexmark-q1, -q2, -q3, -q5, -q8: Nexmark's queries over a topic of Nexmark events (spark_apps.nexmark), checked by
  nexmark.reference.

A user's application is a Python file defining `build(df, args) -> DataFrame` over the same input and
`OUTPUT_MODE` ("append", "update" or "complete"); see from_file().
"""
from __future__ import annotations

import importlib.util
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_apps import nexmark


@dataclass(frozen=True)
class AppOptions:
    partitions: int = 8  # repartition: shuffle target
    window: float = 10.0  # fixwindow: window length, seconds


@dataclass(frozen=True)
class App:
    name: str
    build: Callable[[DataFrame, AppOptions], DataFrame]
    output_mode: str  # append | update
    kind: str  # how verify reads the sink: records | words | windows | nexmark
    per_batch: Callable[[DataFrame], DataFrame] | None = None  # applied to each micro-batch before the sink


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
    "nexmark-q1": App("nexmark-q1", nexmark.q1, "append", "nexmark"),
    "nexmark-q2": App("nexmark-q2", nexmark.q2, "append", "nexmark"),
    "nexmark-q3": App("nexmark-q3", nexmark.q3, "append", "nexmark"),
    "nexmark-q5": App("nexmark-q5", nexmark.q5_counts, "append", "nexmark", per_batch=nexmark.q5_hottest),
    "nexmark-q8": App("nexmark-q8", nexmark.q8, "append", "nexmark"),
}


OUTPUT_MODES = ("append", "update", "complete")


class _Hold:
    """The per-record wait of with_record_cost. It sleeps once at least 2 ms are owed: a sleep overshoots by tens of
    microseconds, so one per record would wait longer than asked; what it overshoots is counted as paid."""

    SLICE_S = 0.002

    def __init__(self, seconds: float):
        self.seconds, self.owed = seconds, 0.0

    def __call__(self, _seq) -> bool:
        self.owed += self.seconds
        if self.owed >= self.SLICE_S:
            started = time.monotonic()
            time.sleep(self.owed)
            self.owed -= time.monotonic() - started
        return True


def with_record_cost(df: DataFrame, seconds: float) -> DataFrame:
    """The same rows, each holding its task for `seconds`, as a call to an outside service per record would (an
    enrichment lookup). It waits rather than computes, so one task slot carries at most 1/seconds records/s on any
    machine: a job's capacity per executor core is known, and more executors raise it. A filter that keeps every row,
    not a column: the optimizer prunes a column no query reads (the Nexmark queries read only `value`), never a
    filter. A plain Python UDF (not an Arrow one, which would need pandas in the image), non-deterministic so that
    it runs once per row wherever the planner puts it."""
    if seconds <= 0:
        return df
    hold = F.udf(_Hold(seconds), "boolean", useArrow=False).asNondeterministic()
    return df.where(hold("seq"))


def from_file(path: str, args: list[str]) -> App:
    """The application a Python file defines: build(df, args) -> DataFrame and OUTPUT_MODE. Its functions travel to
    the executors by value, so a UDF defined in the file works where the file itself is not importable."""
    from pyspark import cloudpickle

    file = Path(path)
    if not file.is_file():
        raise SystemExit(f"--app-file {path}: no such file")
    module_name = f"elastream_app_{file.stem}"
    spec = importlib.util.spec_from_file_location(module_name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # cloudpickle needs it registered to pickle it by value
    spec.loader.exec_module(module)
    build, mode = getattr(module, "build", None), getattr(module, "OUTPUT_MODE", "append")
    if not callable(build):
        raise SystemExit(f"--app-file {path}: defines no build(df, args) function")
    if mode not in OUTPUT_MODES:
        raise SystemExit(f"--app-file {path}: OUTPUT_MODE must be one of {', '.join(OUTPUT_MODES)}, not {mode!r}")
    cloudpickle.register_pickle_by_value(module)
    arguments = list(args)

    def build_query(df: DataFrame, _: AppOptions) -> DataFrame:
        out = build(df, arguments)
        if not isinstance(out, DataFrame):
            raise SystemExit(f"--app-file {path}: build() returned {type(out).__name__}, not a DataFrame")
        return out

    return App(file.stem, build_query, mode, "custom")
