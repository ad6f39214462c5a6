"""The Spark configuration `elastream tune` searches: typed knobs with ranges, their defaults read from the
StreamApp, and the way back from a configuration to the StreamApp (a merge patch of its `spec.spark`)."""
from __future__ import annotations

import re
from typing import Any

from elastream.api.base import parse_duration
from elastream.api.streamapp import StreamAppSpec
from elasticity.tuning.space import Choice, ConfigSpace, Float, Int

STATE_STORE = "spark.sql.streaming.stateStore.providerClass"
STATE_STORES = {
    "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}
LOCALITY_WAIT = "spark.locality.wait"
NO_CAP = 1_000_000  # max_records_per_trigger at the top of its range means no cap (maxRecordsPerTrigger unset)

# knob -> (low, high): the ranges; each knob's default is the StreamApp's own value, pulled into its range
RANGES = {
    "trigger_interval_s": (0.5, 10.0),
    "shuffle_partitions": (1, 64),
    "max_records_per_trigger": (1000, NO_CAP),
    "executor_cores": (1, 2),
    "executor_memory_mb": (512, 4096),
    "locality_wait_s": (0.0, 5.0),
}


def space_for(spec: StreamAppSpec) -> ConfigSpace:
    """The knobs, with the StreamApp's current configuration as the default (the one to beat)."""
    now = current(spec)

    def clamp(name, v):
        lo, hi = RANGES[name]
        return min(max(v, lo), hi)

    return ConfigSpace([
        Float("trigger_interval_s", *RANGES["trigger_interval_s"], clamp("trigger_interval_s", now["trigger_interval_s"]), log=True),
        Int("shuffle_partitions", *RANGES["shuffle_partitions"], clamp("shuffle_partitions", now["shuffle_partitions"]), log=True),
        Int("max_records_per_trigger", *RANGES["max_records_per_trigger"],
            clamp("max_records_per_trigger", now["max_records_per_trigger"]), log=True),
        Int("executor_cores", *RANGES["executor_cores"], clamp("executor_cores", now["executor_cores"])),
        Int("executor_memory_mb", *RANGES["executor_memory_mb"], clamp("executor_memory_mb", now["executor_memory_mb"]), log=True),
        Choice("state_store", tuple(STATE_STORES), now["state_store"]),
        Float("locality_wait_s", *RANGES["locality_wait_s"], clamp("locality_wait_s", now["locality_wait_s"])),
    ])


def current(spec: StreamAppSpec) -> dict[str, Any]:
    """The StreamApp's configuration as knob values."""
    spark = spec.spark
    store = next((name for name, cls in STATE_STORES.items() if spark.conf.get(STATE_STORE) == cls), "hdfs")
    cap = spark.source.max_records_per_trigger
    return {
        "trigger_interval_s": parse_duration(spark.trigger_interval),
        "shuffle_partitions": spark.max_parallelism,
        "max_records_per_trigger": NO_CAP if cap is None else cap,
        "executor_cores": spark.executor.cores,
        "executor_memory_mb": memory_mb(spark.executor.memory),
        "state_store": store,
        "locality_wait_s": parse_duration(spark.conf.get(LOCALITY_WAIT, "3s")),
    }


def patch(config: dict[str, Any]) -> dict[str, Any]:
    """A JSON merge patch of the StreamApp that sets `config` (kubectl patch --type merge); null unsets a field."""
    cap = config["max_records_per_trigger"]
    return {"spec": {"spark": {
        "triggerInterval": seconds_text(config["trigger_interval_s"]),
        "maxParallelism": config["shuffle_partitions"],
        "executor": {"cores": config["executor_cores"], "memory": f"{config['executor_memory_mb']}m"},
        "source": {"maxRecordsPerTrigger": None if cap >= NO_CAP else cap},
        "conf": {STATE_STORE: STATE_STORES[config["state_store"]],
                 LOCALITY_WAIT: f"{round(config['locality_wait_s'] * 1000)}ms"},  # Spark's time strings take no fractions
    }}}


def apply(spec: StreamAppSpec, config: dict[str, Any]) -> StreamAppSpec:
    """The StreamApp with `config` set, validated as the API server would."""
    return StreamAppSpec.model_validate(merge(spec.model_dump(by_alias=True, exclude_none=True), patch(config)["spec"]))


def merge(doc: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    """RFC 7386 merge patch."""
    out = dict(doc)
    for key, value in change.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def memory_mb(text: str) -> int:
    """Spark's memory strings as the StreamApp takes them ("768m", "2g", "1gb", "1048576": bytes) in MiB."""
    number, unit = re.fullmatch(r"([0-9]+)([kmgtp]?)b?", text.lower()).groups()
    scale = {"": 1 / 2**20, "k": 1 / 1024, "m": 1, "g": 1024, "t": 2**20, "p": 2**30}[unit]
    return max(1, round(int(number) * scale))


def seconds_text(seconds: float) -> str:
    """A duration the StreamApp accepts: whole milliseconds."""
    return f"{round(seconds * 1000)}ms"
