"""The ports through which the core talks to the world (as the Flink autoscaler does).

Kubernetes adapters (controllers/), the local mode and the simulator implement them; the core only sees
these Protocols and the plain data of elasticity.model.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from elasticity.model import Decision, JobObservation


class MetricsUnavailable(Exception):
    """A MetricsSource cannot read the job's metrics (source down, required series missing); the message says
    which. The autoscaler holds and reports the message."""


@runtime_checkable
class MetricsSource(Protocol):
    def observe(self, job: str) -> JobObservation | None:
        """The latest metrics of `job`, or None when there are none; raises MetricsUnavailable to say why not."""


@runtime_checkable
class Realizer(Protocol):
    def realize(self, job: str, decision: Decision) -> float | None:
        """Apply decision.targets (parallelism per stage) to the running job. Raise on failure.

        May return the seconds a rescale of this job stalls processing, as the engine measured it on its earlier
        rescales (a Storm rebalance restarts workers), or None when it does not know: policies plan for it."""


@runtime_checkable
class Mover(Protocol):
    def move(self, job: str, executors: list[str]) -> list[str]:
        """Restart these executors of `job` elsewhere (the placement says where). Returns those it moved."""


@runtime_checkable
class StateStore(Protocol):
    def load(self, job: str) -> dict[str, Any] | None:
        """The autoscaler state saved for `job` (a JSON-able dict), or None."""

    def save(self, job: str, state: dict[str, Any]) -> None:
        """Persist the state of `job` (e.g. a ConfigMap). `state` shares the autoscaler's live data, which the next
        evaluation changes: serialize or copy it before returning."""


@dataclass
class Event:
    """A Kubernetes-style event: type Normal|Warning, a CamelCase reason, a message."""

    type: Literal["Normal", "Warning"]
    reason: str
    message: str
    decision: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class EventSink(Protocol):
    def emit(self, job: str, event: Event) -> None:
        """Record an event about `job`."""


@runtime_checkable
class Clock(Protocol):
    def now(self) -> float:
        """Seconds (any fixed origin; observations use the same base)."""
