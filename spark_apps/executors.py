"""Executor count of a running driver, changed in place through Spark's scheduler backend.

Scale up: SparkContext.requestTotalExecutors(n) — the cluster manager launches the missing executors.
Scale down: graceful decommission of the newest executors (their shuffle and state-store blocks migrate first), with
the target adjusted so they are not replaced. Works on standalone and local-cluster masters; plain local[N] has no
executors to add, so there the runner falls back to restarting from the checkpoint (see spark_apps.runner).
"""
from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import dataclass, field

from pyspark import SparkContext

log = logging.getLogger(__name__)
_LOCAL = re.compile(r"^local(\[(\d+|\*)(,\d+)?\])?$")


def in_place_possible(master: str) -> bool:
    """Executors can be added and removed without a restart (standalone, local-cluster, k8s), not on local[N]."""
    return not _LOCAL.match(master)


def local_threads(master: str) -> int:
    m = _LOCAL.match(master)
    if not m:
        raise ValueError(f"{master} is not a local[N] master")
    n = (m.group(2) or "1")
    return 1 if n == "*" else int(n)


@dataclass
class Rescale:
    """One change of target, for the metrics and the closing figures."""

    direction: str  # up | down
    from_n: int
    to_n: int
    started: float = field(default_factory=time.monotonic)
    seconds: float | None = None  # until the registered executors equalled the target


class InPlaceExecutors:
    """Current and target executors of a live SparkContext; every method is safe to call from any thread."""

    def __init__(self, sc: SparkContext, minimum: int, maximum: int, target: int):
        self._sc, self.minimum, self.maximum, self.target = sc, minimum, maximum, target
        self._lock = threading.Lock()
        self._draining: set[str] = set()
        self._replacing = False
        self.last: Rescale | None = None
        self.history: list[Rescale] = []

    def ids(self) -> list[str]:
        """Executors registered with the driver (the driver itself is not one of them)."""
        seq = self._sc._jsc.sc().getExecutorIds()
        return [seq.apply(i) for i in range(seq.size())]

    def current(self) -> int:
        return len(self.ids())

    def draining(self) -> int:
        with self._lock:
            live = set(self.ids())
            self._draining &= live
            return len(self._draining)

    def _request_total(self, n: int) -> None:
        jvm = self._sc._jvm
        empty = jvm.org.apache.spark.api.python.PythonUtils.toScalaMap(jvm.java.util.HashMap())
        self._sc._jsc.sc().requestTotalExecutors(n, 0, empty)

    def _decommission(self, executor_id: str) -> None:
        jvm = self._sc._jvm
        info = jvm.org.apache.spark.scheduler.ExecutorDecommissionInfo(
            "elastream: scale down", jvm.scala.Option.empty())
        backend = self._sc._jsc.sc().schedulerBackend()
        # adjustTargetNumExecutors=True: do not replace it; triggeredByExecutor=False: the driver asks
        backend.decommissionExecutor(executor_id, info, True, False)

    def task_seconds(self) -> dict[str, float]:
        """Seconds of task time each live executor has run so far (Spark's status store, kept with or without
        the web UI): the executor's load, read as a counter, for placement (docs/placement.md)."""
        summaries = self._sc._jsc.sc().statusStore().executorList(True)
        out = {}
        for i in range(summaries.size()):
            s = summaries.apply(i)
            if s.id() != "driver":
                out[s.id()] = s.totalDuration() / 1000.0
        return out

    def replace(self, executor_ids: list[str]) -> list[str]:
        """Decommission these executors and let Spark start one in place of each (the target stays): how an
        executor moves to another node. Returns the ids that were live and not draining already."""
        with self._lock:
            live = set(self.ids()) - self._draining
            moved = [e for e in executor_ids if e in live]
            jvm = self._sc._jvm
            backend = self._sc._jsc.sc().schedulerBackend()
            for e in moved:
                info = jvm.org.apache.spark.scheduler.ExecutorDecommissionInfo(
                    "elastream: placement moves it", jvm.scala.Option.empty())
                backend.decommissionExecutor(e, info, False, False)  # adjustTargetNumExecutors=False: replaced
                self._draining.add(e)  # so reconcile() does not cut the replacement as one too many
            if moved:
                self._replacing = True
                # the total asked for counts the draining ones out: a standalone master then launches the
                # replacements; Kubernetes' allocator starts them anyway
                self._request_total(self.target + len(self._draining))
            log.info("executors: replacing %s", moved)
            return moved

    def set_target(self, n: int) -> None:
        """Move toward n executors; returns at once (executors start or drain in the background)."""
        with self._lock:
            live = [e for e in self.ids() if e not in self._draining]
            before = len(live)
            self.target = n
            if n < before:
                # newest first: the oldest executors hold most of the cached state-store instances
                for victim in sorted(live, key=_numeric, reverse=True)[: before - n]:
                    self._decommission(victim)
                    self._draining.add(victim)
            self._request_total(n)
            if n != before:
                self.last = Rescale("up" if n > before else "down", before, n)
                self.history.append(self.last)
            log.info("executors: target %d (live %d)", n, before)

    def settle(self) -> None:
        """Record when the last rescale finished; once replaced executors are gone, ask for the target again."""
        if self._replacing and self.draining() == 0:
            self._replacing = False
            self._request_total(self.target)
        r = self.last
        if r is not None and r.seconds is None and self.current() == r.to_n and self.draining() == 0:
            r.seconds = time.monotonic() - r.started
            log.info("executors: %s %d -> %d took %.1fs", r.direction, r.from_n, r.to_n, r.seconds)

    def reconcile(self) -> None:
        """Called periodically: record when the last rescale finished, and decommission executors beyond the
        target. Standalone launches one on every free worker at start whatever spark.executor.instances says, and
        one may register late; this cuts them back without counting it as a rescale."""
        with self._lock:
            live = [e for e in self.ids() if e not in self._draining]
            for victim in sorted(live, key=_numeric, reverse=True)[: max(0, len(live) - self.target)]:
                self._decommission(victim)
                self._draining.add(victim)
        self.settle()


def _numeric(executor_id: str) -> int:
    return int(executor_id) if executor_id.isdigit() else -1
