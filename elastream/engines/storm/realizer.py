"""Realize a decision on a Storm topology: one Nimbus rebalance that sets the executors of the components that
change and the workers that follow from the new total, then wait until Nimbus shows the new layout.

Storm allows one rebalance at a time and restarts every worker whose assignment changes, so a rebalance stalls
the topology: the time it takes is measured and kept (`stalls`), for the status, the benchmark and the core's
planning (PolicyConfig.restart_time_s).
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Callable

from elastream.engines.base import JobUnreachable
from elasticity.model import Decision

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
    resumed_s: float | None = None  # call → the topology processes again (when a probe can tell)


@dataclass
class RebalanceRealizer:
    nimbus: object  # storm_apps.nimbus.NimbusClient
    topology: str
    executors_per_worker: int
    workers_range: tuple[int, int]
    timeout_s: float = 180.0
    resumed: Callable[[float], float | None] | None = None  # probe: seconds since `t0` until work resumed, or None
    on_rebalance: Callable[[Rebalance], None] | None = None
    history: list[Rebalance] = field(default_factory=list)

    def realize(self, job: str, decision: Decision) -> None:
        changed = {c: n for c, n in decision.targets.items() if decision.current.get(c) != n}
        workers = workers_for(decision.targets, self.executors_per_worker, *self.workers_range)
        t0 = time.monotonic()
        try:
            self.nimbus.rebalance(self.topology, executors=changed, workers=workers, wait_s=0)
            layout_s = self.nimbus.wait_rebalanced(self.topology, executors=decision.targets, workers=workers,
                                                   timeout_s=self.timeout_s)
        except ConnectionError as err:  # the client's NimbusUnavailable is a ConnectionError
            raise JobUnreachable(str(err)) from err
        done = Rebalance(dict(changed), workers, round(layout_s, 2))
        if self.resumed is not None:
            done.resumed_s = self.resumed(t0)
        self.history.append(done)
        log.info("rebalanced %s: %s, %d workers, layout in %.1fs", self.topology, changed, workers, layout_s)
        if self.on_rebalance is not None:
            self.on_rebalance(done)
