"""Plain data: what the core observes about a job, and what it decides.

Everything here is a dataclass of numbers, strings and dicts so that adapters (Prometheus, the simulator,
a local runner) can build observations and the operator can copy decisions into a Kubernetes status.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal


def _finite(x: float | None) -> bool:
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)


@dataclass
class StageMetrics:
    """Metrics of one stage (Spark) or component (Storm), aggregated over the last scrape window.

    Rates are records per second. ``input_rate`` of a source stage is the rate at which records are
    *produced* upstream (e.g. Kafka), not what the stage manages to read; ``backlog`` of a source is its
    lag in records. Utilization comes from ``busy_fraction`` (Storm capacity, Flink busy time) or, for a
    micro-batch engine, ``batch_duration_s / trigger_interval_s``.
    """

    name: str
    parallelism: int
    input_rate: float | None = None
    processing_rate: float | None = None
    busy_fraction: float | None = None
    busy_fraction_max: float | None = None  # the busiest instance's (a hot key shows here; the mean hides it)
    batch_duration_s: float | None = None
    trigger_interval_s: float | None = None
    latency_p50_s: float | None = None
    latency_p99_s: float | None = None
    backlog: float = 0.0
    max_parallelism: int | None = None
    output_rate: float | None = None
    upstream: tuple[str, ...] = ()
    # Me-Stream eq. 1-2, when an adapter measures them directly (seconds); derived otherwise.
    calc_time_s: float | None = None
    comm_time_s: float | None = None

    def utilization(self) -> float | None:
        """Busy fraction in [0, 1]; from batch duration / trigger interval for micro-batch engines."""
        if _finite(self.busy_fraction):
            return min(max(float(self.busy_fraction), 0.0), 1.0)
        if _finite(self.batch_duration_s) and _finite(self.trigger_interval_s) and self.trigger_interval_s > 0:
            return min(max(self.batch_duration_s / self.trigger_interval_s, 0.0), 1.0)
        return None

    def true_processing_rate(self, min_utilization: float = 0.02) -> float | None:
        """Records/s the stage could process at 100 % busy: processing rate / busy fraction (DS2)."""
        u = self.utilization()
        if not _finite(self.processing_rate) or u is None:
            return None
        return float(self.processing_rate) / max(u, min_utilization)

    def selectivity(self) -> float:
        """Output records per processed record (1 when unknown)."""
        if _finite(self.output_rate) and _finite(self.processing_rate) and self.processing_rate > 0:
            return float(self.output_rate) / float(self.processing_rate)
        return 1.0

    def missing(self, required: tuple[str, ...]) -> list[str]:
        """Names of required metrics that are absent or not finite."""
        out = []
        for name in required:
            if name == "utilization":
                if self.utilization() is None:
                    out.append("busy_fraction")
            elif not _finite(getattr(self, name)):
                out.append(name)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "StageMetrics":
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        kw["upstream"] = tuple(kw.get("upstream", ()))
        return cls(**kw)


@dataclass
class JobObservation:
    """One observation of a job: its stages in topological order plus end-to-end figures."""

    job: str
    timestamp: float  # when the metrics were collected (seconds, the Clock's time base)
    stages: list[StageMetrics]
    latency_avg_s: float | None = None
    latency_p50_s: float | None = None
    latency_p99_s: float | None = None

    def stage(self, name: str) -> StageMetrics:
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(name)

    @property
    def parallelism(self) -> dict[str, int]:
        return {s.name: int(s.parallelism) for s in self.stages}

    def sources(self) -> list[StageMetrics]:
        return [s for s in self.stages if not s.upstream] or self.stages[:1]

    def upstream_of(self, name: str) -> set[str]:
        """The stage and every stage of the job upstream of it (an upstream outside the job is none of them)."""
        names = {s.name for s in self.stages}
        seen, todo = set(), [name]
        while todo:
            n = todo.pop()
            if n not in seen and n in names:
                seen.add(n)
                todo.extend(self.stage(n).upstream)
        return seen

    def source_rates(self) -> dict[str, float]:
        """Records/s into each source stage, by name."""
        return {s.name: float(s.input_rate or 0.0) for s in self.sources()}

    def source_rate(self) -> float:
        """Records/s produced into the job (sum over source stages)."""
        return float(sum(s.input_rate or 0.0 for s in self.sources()))

    def average_latency(self) -> float | None:
        for v in (self.latency_avg_s, self.latency_p50_s):
            if _finite(v):
                return float(v)
        return None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for s in d["stages"]:
            s["upstream"] = list(s["upstream"])
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "JobObservation":
        return cls(
            job=d["job"],
            timestamp=float(d["timestamp"]),
            stages=[StageMetrics.from_dict(s) for s in d["stages"]],
            latency_avg_s=d.get("latency_avg_s"),
            latency_p50_s=d.get("latency_p50_s"),
            latency_p99_s=d.get("latency_p99_s"),
        )


Action = Literal["scale", "hold", "none"]


@dataclass
class Decision:
    """The answer of the core for one evaluation.

    ``action``: "scale" (targets differ from current and every guard let it through), "hold" (a change was
    wanted or metrics were unusable, and something blocked it — ``reason`` says what), or "none" (the
    current parallelism is right). ``advisory`` is set in advisor mode: the decision is reported, never realized.
    """

    job: str
    timestamp: float
    policy: str
    action: Action
    current: dict[str, int]
    targets: dict[str, int]
    reason: str
    inputs: dict[str, float] = field(default_factory=dict)
    advisory: bool = False
    guard: str | None = None  # the guard that blocked or changed the policy's proposal, if any

    @property
    def hold(self) -> bool:
        return self.action == "hold"

    @property
    def changed(self) -> bool:
        return self.action == "scale" and self.targets != self.current

    @property
    def realize(self) -> bool:
        """True when the decision should be applied to the job."""
        return self.changed and not self.advisory

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Decision":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


def fmt_rate(x: float) -> str:
    """1234.5 -> '1.2k/s' (compact rates for human-readable reasons)."""
    x = float(x)
    if abs(x) >= 1e6:
        return f"{x / 1e6:.1f}M/s"
    if abs(x) >= 1e3:
        return f"{x / 1e3:.1f}k/s"
    return f"{x:.0f}/s"


def fmt_count(x: float) -> str:
    x = float(x)
    if abs(x) >= 1e6:
        return f"{x / 1e6:.1f}M"
    if abs(x) >= 1e3:
        return f"{x / 1e3:.1f}k"
    return f"{x:.0f}"
