"""The autoscaler's memory between evaluations (JSON-able; saved through the StateStore port)."""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from elasticity.model import JobObservation


@dataclass
class AutoscalerState:
    history: list[dict[str, Any]] = field(default_factory=list)  # JobObservation dicts in the metrics window
    last_rescale_at: float | None = None
    rescale_times: list[float] = field(default_factory=list)  # realized rescales within the last hour
    rescale_stall_s: float | None = None  # what the engine last measured a rescale to stall processing
    scale_down_since: dict[str, float] = field(default_factory=dict)  # "*" -> since when the job wants a scale-down
    pending_effectiveness: dict[str, dict[str, float]] = field(default_factory=dict)  # stage -> {p0, p1, rate0, at}
    ineffective_until: dict[str, float] = field(default_factory=dict)  # stage -> scale-ups blocked until
    policy_memory: dict[str, Any] = field(default_factory=dict)
    last_decision: dict[str, Any] | None = None

    def observations(self) -> list[JobObservation]:
        return [JobObservation.from_dict(d) for d in self.history]

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON-able data, sharing the live lists and dicts: saved at every evaluation, and every
        StateStore serializes what it is given at once (a deep copy here was a fifth of a simulated run)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "AutoscalerState":
        if not d:
            return cls()
        known = cls.__dataclass_fields__.keys()
        return cls(**{k: v for k, v in d.items() if k in known})

