"""In-memory implementations of the ports, for tests, the simulator and the local mode."""
from __future__ import annotations

import copy
import json
import time
from typing import Any, Callable

from elasticity.model import Decision, JobObservation
from elasticity.ports import Event


class SystemClock:
    def now(self) -> float:
        return time.time()


class ManualClock:
    """A clock the caller moves: tests and the simulator."""

    def __init__(self, t: float = 0.0) -> None:
        self.t = float(t)

    def now(self) -> float:
        return self.t

    def advance(self, dt: float) -> float:
        self.t += dt
        return self.t


class InMemoryStateStore:
    """Keeps states as JSON round-trips, so whatever works here also works with a ConfigMap."""

    def __init__(self) -> None:
        self.states: dict[str, str] = {}

    def load(self, job: str) -> dict[str, Any] | None:
        raw = self.states.get(job)
        return None if raw is None else json.loads(raw)

    def save(self, job: str, state: dict[str, Any]) -> None:
        self.states[job] = json.dumps(state)


class ListEventSink:
    def __init__(self) -> None:
        self.events: list[tuple[str, Event]] = []

    def emit(self, job: str, event: Event) -> None:
        self.events.append((job, event))


class RecordingRealizer:
    """Records decisions; optionally forwards targets to a callback (e.g. a simulated job)."""

    def __init__(self, apply: Callable[[dict[str, int]], None] | None = None) -> None:
        self.applied: list[Decision] = []
        self._apply = apply

    def realize(self, job: str, decision: Decision) -> None:
        self.applied.append(copy.deepcopy(decision))
        if self._apply:
            self._apply(dict(decision.targets))


class StaticMetricsSource:
    """Returns whatever observation was set last (or None)."""

    def __init__(self, observation: JobObservation | None = None) -> None:
        self.observation = observation

    def observe(self, job: str) -> JobObservation | None:
        return self.observation
