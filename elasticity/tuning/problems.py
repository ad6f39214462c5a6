"""Response surfaces that behave like a Spark Structured Streaming job's configuration, for comparing optimisers
(`elastream bench tuning`): the simulator's micro-batch job (elasticity.simulation.job) under a constant rate,
with Spark's knobs mapped onto the model.

What each knob does here, and why it has an optimum inside its range:
- `trigger_interval_s`: a record waits up to one trigger for its batch, but every batch pays a fixed cost
  (planning, commit) plus a cost per task, so short triggers spend their time on overhead and fall behind.
- `shuffle_partitions`: the tasks per batch (their cost), and the key groups: fewer partitions than cores leaves
  cores idle, and p cores over K partitions run ceil(K/p) waves (eff(p, K) = K / ceil(K/p)).
- `executors` × `executor_cores`: cores, up to what the cluster has (more fails to start).
- `executor_memory_mb`: the heap holds the state (twice, with the HDFS-backed store's versions); too little fails
  (out of memory), and a heap that is more than 60 % full slows every record (garbage collection).
- `state_store`: RocksDB keeps the state off the heap, for 15 % more CPU per record.
- `locality_wait_s`: tasks that miss a local slot wait up to this long for one; with no wait they read their
  data remotely, which makes every record slower.
- `max_records_per_trigger`: a batch cap under the offered rate × trigger falls behind.
A configuration fails (EvaluationFailed) when it cannot start or falls behind; otherwise its objective is the
p99 latency: the simulator's p99 plus the wait for the trigger and the batch's duration.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from elasticity.policies.capacity import effective_parallelism
from elasticity.simulation.job import JobSpec, SimulatedJob, StageSpec
from elasticity.tuning.loop import EvaluationFailed
from elasticity.tuning.space import Choice, ConfigSpace, Float, Int

SPARK_SPACE = ConfigSpace([
    Float("trigger_interval_s", 0.2, 10.0, default=1.0, log=True),
    Int("shuffle_partitions", 4, 400, default=200, log=True),  # Spark's default: 200
    Int("max_records_per_trigger", 5_000, 1_000_000, default=1_000_000, log=True),  # unbounded, in effect
    Int("executors", 1, 6, default=2),
    Int("executor_cores", 1, 3, default=1),
    Int("executor_memory_mb", 512, 8192, default=1024, log=True),  # Spark's default: 1g
    Choice("state_store", ("hdfs", "rocksdb"), default="hdfs"),
    Float("locality_wait_s", 0.0, 10.0, default=3.0),  # Spark's default: 3s
])
HEAP_BASE_MB = 300.0  # what Spark itself holds in an executor's heap
SIM_SECONDS = 180


@dataclass(frozen=True)
class SparkLikeJob:
    """A workload and its cluster; `evaluate(config)` is the p99 latency (s) or EvaluationFailed."""

    name: str
    rate: float  # records/s offered
    record_cpu_ms: float  # CPU per record per stage
    state_mb: float  # the job's state, over all executors
    stages: int = 1
    cluster_cores: int = 8
    cluster_memory_mb: int = 16_384
    batch_fixed_s: float = 0.15  # planning and commit, every batch
    task_overhead_s: float = 0.002  # per task, every batch
    locality_miss: float = 0.2  # share of tasks whose data is not local to their first free slot

    @property
    def space(self) -> ConfigSpace:
        return SPARK_SPACE

    def evaluate(self, config: dict[str, Any]) -> float:
        c = config
        cores = c["executors"] * c["executor_cores"]
        if cores > self.cluster_cores:
            raise EvaluationFailed(f"cannot start: {cores} cores asked, the cluster has {self.cluster_cores}")
        if c["executors"] * c["executor_memory_mb"] > self.cluster_memory_mb:
            raise EvaluationFailed(f"cannot start: {c['executors']} x {c['executor_memory_mb']} MB asked, the "
                                   f"cluster has {self.cluster_memory_mb} MB")
        rocks = c["state_store"] == "rocksdb"
        heap_need = HEAP_BASE_MB + self.state_mb / c["executors"] * (0.2 if rocks else 2.0)
        fill = heap_need / c["executor_memory_mb"]
        if fill > 1.0:
            raise EvaluationFailed(f"out of memory: the heap needs {heap_need:.0f} MB, has {c['executor_memory_mb']}")
        wait = c["locality_wait_s"]
        remote = 1.0 + self.locality_miss * 0.5 * math.exp(-wait / 0.5)  # remote reads for tasks that did not wait
        slowdown = (1.15 if rocks else 1.0) * (1.0 + max(0.0, fill - 0.6) * 5.0) * remote
        trigger = c["trigger_interval_s"]
        if c["max_records_per_trigger"] < self.rate * trigger:
            raise EvaluationFailed(f"falls behind: {c['max_records_per_trigger']} records per trigger, "
                                   f"{self.rate * trigger:.0f} arrive")
        partitions = c["shuffle_partitions"]
        overhead = (self.batch_fixed_s + self.task_overhead_s * partitions / cores * self.stages
                    + self.locality_miss * 0.1 * wait)
        service = 1000.0 / (self.record_cpu_ms * slowdown)  # records/s of one core
        stage = StageSpec("stage", service, key_groups=partitions, trigger_interval_s=trigger,
                          batch_overhead_s=overhead, initial_parallelism=cores, base_latency_s=0.0)
        if stage.overhead_fraction >= 0.95:
            raise EvaluationFailed(f"falls behind: every {trigger:.2g}s batch spends {overhead:.2f}s on overhead")
        spec = JobSpec(self.name, [stage] * self.stages, capacity_noise=0.02)
        job = SimulatedJob(spec, np.full(SIM_SECONDS, self.rate), seed=7)
        for _ in range(SIM_SECONDS):
            job.step()
        backlog = job.tl.backlog[-1].sum()
        if backlog > self.rate * 10:
            raise EvaluationFailed(f"falls behind: {backlog:.0f} records queued after {SIM_SECONDS}s")
        # the simulator's p99 holds each stage's wait for its batch and the batch; a query's stages run in one
        # batch, so its records wait for a trigger once
        p99 = float(np.mean(job.tl.latency_p99[SIM_SECONDS // 2:]))
        return p99 - (self.stages - 1) * 0.99 * trigger


PROBLEMS = {
    p.name: p for p in (
        SparkLikeJob("wordcount", rate=2500, record_cpu_ms=0.3, state_mb=200),
        SparkLikeJob("stateful-join", rate=350, record_cpu_ms=1.0, state_mb=500, stages=2,
                     cluster_memory_mb=24_576),
        SparkLikeJob("etl-remote-data", rate=3000, record_cpu_ms=0.15, state_mb=50, stages=2, cluster_cores=6,
                     cluster_memory_mb=12_288, locality_miss=0.5),
    )
}


def score(problem: SparkLikeJob, config: dict[str, Any]) -> float:
    """The objective or +inf when the configuration fails (for the best-known search)."""
    try:
        return problem.evaluate(config)
    except EvaluationFailed:
        return math.inf
