"""The exactly-once sink: one directory per micro-batch, named by batch id and overwritten when a batch is replayed.

Spark replays a batch after a crash with the same id, offsets and state, so writing it again to the same place is
idempotent; `_SUCCESS` (written last by the Hadoop committer) marks a complete batch for spark_apps.verify.
"""
from __future__ import annotations

import os
from typing import Callable

from pyspark.sql import DataFrame

BATCH_PREFIX = "batch-"


def batch_dir(sink: str, batch_id: int) -> str:
    return os.path.join(sink, f"{BATCH_PREFIX}{batch_id:09d}")


def writer(sink: str, per_batch: Callable[[DataFrame], DataFrame] | None = None) -> Callable[[DataFrame, int], None]:
    """A foreachBatch function writing each batch as JSON lines, after `per_batch` (an app's last step over the whole
    micro-batch) if given. One action only: a second one would recompute the batch (and its state update)."""
    def write(df: DataFrame, batch_id: int) -> None:
        (per_batch(df) if per_batch is not None else df).write.mode("overwrite").json(batch_dir(sink, batch_id))
    return write
