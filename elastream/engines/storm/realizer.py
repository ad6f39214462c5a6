"""Realize a decision on a Storm topology: one Nimbus rebalance that sets the executors of the components that
change and the workers that follow from the new total, then wait until Nimbus shows the new layout.

Storm allows one rebalance at a time and restarts every worker whose assignment changes, so a rebalance stalls
the topology. Where the engine can tell (a `stall_probe`: the local mode reads the source's committed offset), each
rebalance's stall is measured in the background — from the call until every record emitted before it is acked,
replays of tuples lost in restarted workers included — and realize() returns the median of those measured so far,
which the core plans with (Realizer.realize's return value).
"""
from __future__ import annotations

import json
import logging
import math
import statistics
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from elastream.engines.base import JobUnreachable
from elasticity.model import Decision
from storm_apps.traffic import default_conf

log = logging.getLogger(__name__)


def workers_for(executors: dict[str, int], per_worker: int, lo: int, hi: int) -> int:
    """Workers follow the executors: ceil(total / per_worker), within [lo, hi]."""
    return max(lo, min(hi, math.ceil(sum(executors.values()) / per_worker)))


@dataclass
class Rebalance:
    """One realized rebalance: what changed and how long it took."""

    executors: dict[str, int]
    workers: int
    layout_s: float  # call → Nimbus shows the new layout, ACTIVE
    stall_s: float | None = None  # call → every record emitted before the call acked (when a probe can tell)


@dataclass
class RebalanceRealizer:
    nimbus: object  # storm_apps.nimbus.NimbusClient
    topology: str
    executors_per_worker: int
    workers_range: tuple[int, int]
    timeout_s: float = 180.0
    # called just before a rebalance; returns a blocking wait: (t0) -> seconds from t0 until the stall ended, or None
    stall_probe: Callable[[], Callable[[float], float | None]] | None = None
    on_rebalance: Callable[[Rebalance], None] | None = None
    # managed mode: the supervisors follow the workers (elastream.engines.storm.supervisors): called with the new
    # worker count before the rebalance (add the slots it needs, or drop the supervisors it will not use) and after
    before: Callable[[int], None] | None = None
    after: Callable[[int], None] | None = None
    # the app is placed (spec.placement): a rescale ends its plan, whose executors no longer exist as planned, and
    # Storm's default scheduler lays out the new ones until the next plan
    ends_plan: bool = False
    history: list[Rebalance] = field(default_factory=list)

    def realize(self, job: str, decision: Decision) -> float | None:
        changed = {c: n for c, n in decision.targets.items() if decision.current.get(c) != n}
        workers = workers_for(decision.targets, self.executors_per_worker, *self.workers_range)
        if self.before is not None:
            self.before(workers)
        wait_stall = self.stall_probe() if self.stall_probe is not None else None
        t0 = time.monotonic()
        try:
            if self.ends_plan:
                self.nimbus.rebalance(self.topology, executors=changed, workers=workers, wait_s=0,
                                      conf_overrides=json.dumps(default_conf()))
            else:
                self.nimbus.rebalance(self.topology, executors=changed, workers=workers, wait_s=0)
            layout_s = self.nimbus.wait_rebalanced(self.topology, executors=decision.targets, workers=workers,
                                                   timeout_s=self.timeout_s)
        except ConnectionError as err:  # the client's NimbusUnavailable is a ConnectionError
            raise JobUnreachable(str(err)) from err
        if self.after is not None:
            self.after(workers)
        done = Rebalance(dict(changed), workers, round(layout_s, 2))
        if wait_stall is not None:
            threading.Thread(target=self._measure, args=(done, wait_stall, t0), daemon=True,
                             name=f"stall-{self.topology}").start()
        self.history.append(done)
        log.info("rebalanced %s: %s, %d workers, layout in %.1fs", self.topology, changed, workers, layout_s)
        if self.on_rebalance is not None:
            self.on_rebalance(done)
        return self.typical_stall()

    @staticmethod
    def _measure(done: Rebalance, wait_stall: Callable[[float], float | None], t0: float) -> None:
        stall = wait_stall(t0)
        done.stall_s = round(stall, 2) if stall is not None else None

    def typical_stall(self) -> float | None:
        """The median stall of the rebalances measured so far, or None."""
        measured = [r.stall_s for r in self.history if r.stall_s is not None]
        return statistics.median(measured) if measured else None
