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
        # a plain copy, as dataclasses.asdict gives, without its per-leaf deepcopy: saved at every evaluation
        return {f.name: _plain_copy(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "AutoscalerState":
        if not d:
            return cls()
        known = cls.__dataclass_fields__.keys()
        return cls(**{k: v for k, v in d.items() if k in known})


def _plain_copy(x: Any) -> Any:
    """A deep copy of JSON-like data (dicts, lists, tuples of numbers, strings, None)."""
    if isinstance(x, dict):
        return {k: _plain_copy(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_plain_copy(v) for v in x)
    return x
