"""The pure side of `elastream bench operator`: read the operator's /metrics and the API server's request counters,
turn samples into the figures of one run, and print them as a table. Plain data in and out (no cluster)."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from prometheus_client.parser import text_string_to_metric_families


def samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """(name, labels, value) of every sample of a Prometheus text exposition."""
    return [(s.name, dict(s.labels), float(s.value))
            for family in text_string_to_metric_families(text) for s in family.samples]


def total(text: str, name: str) -> float:
    """The sum of every series of sample `name` (e.g. apiserver_request_total over all its labels)."""
    return sum(v for n, _, v in samples(text) if n == name)


def buckets(text: str, histogram: str) -> dict[float, float]:
    """Cumulative counts of a histogram by upper bound (+Inf included)."""
    out: dict[float, float] = {}
    for name, labels, value in samples(text):
        if name == f"{histogram}_bucket":
            out[float(labels["le"])] = out.get(float(labels["le"]), 0.0) + value
    return out


def quantile(q: float, cumulative: dict[float, float]) -> float | None:
    """PromQL's histogram_quantile over cumulative bucket counts: linear within the bucket the rank falls in (the
    upper bound of the last finite bucket if it falls in +Inf). None without observations."""
    bounds = sorted(cumulative)
    count = cumulative[bounds[-1]] if bounds else 0.0
    if count <= 0:
        return None
    rank, lower, below = q * count, 0.0, 0.0
    for upper in bounds:
        if cumulative[upper] >= rank:
            if math.isinf(upper):
                return lower
            within = cumulative[upper] - below
            return lower + (upper - lower) * ((rank - below) / within if within else 0.0)
        lower, below = upper, cumulative[upper]
    return lower


def delta(after: dict[float, float], before: dict[float, float]) -> dict[float, float]:
    """The bucket counts observed between two scrapes of the same histogram."""
    return {le: count - before.get(le, 0.0) for le, count in after.items()}


@dataclass
class RunResult:
    """The figures of one `elastream bench operator` run."""

    apps: int
    slow_apps: int
    interval_s: float
    first_round_s: float | None          # operator start -> every app evaluated once (None: not all within the limit)
    evaluated: int                        # apps evaluated at least once
    window_s: float = 0.0                 # the steady window the rates are measured over
    evaluations_per_s: float = 0.0
    decision_p50_ms: float | None = None  # CPU time of one evaluation (no network waits)
    decision_p99_ms: float | None = None
    evaluation_p50_ms: float | None = None  # wall time, network waits included
    evaluation_p99_ms: float | None = None
    late_evaluations: int = 0
    failed_steps: int = 0                 # steps that raised (API errors, bugs) in the window: should be 0
    stale_apps: int = 0                   # apps whose last evaluation is older than 2 intervals at the window's end
    stale_fast_apps: int = 0              # ... of those with a responsive endpoint
    on_schedule_apps: int = 0             # apps whose OnSchedule condition is True at the window's end
    rss_mb: float = 0.0
    peak_rss_mb: float = 0.0
    cpu_percent: float = 0.0              # of one core, over the window
    api_requests_per_evaluation: float | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _ms(x: float | None) -> str:
    return "—" if x is None else f"{x:.1f}"


def table(results: list[RunResult]) -> str:
    """The runs side by side, as a Markdown table."""
    rows = [
        ("StreamApps (slow endpoint)", lambda r: f"{r.apps} ({r.slow_apps})"),
        ("evaluationInterval", lambda r: f"{r.interval_s:g} s"),
        ("all evaluated once after", lambda r: "not all" if r.first_round_s is None else f"{r.first_round_s:.0f} s"),
        ("evaluated at least once", lambda r: f"{r.evaluated}/{r.apps}"),
        ("evaluations/s (steady window)", lambda r: f"{r.evaluations_per_s:.1f} (ideal {r.apps / r.interval_s:.1f})"),
        ("decision CPU p50 / p99, ms", lambda r: f"{_ms(r.decision_p50_ms)} / {_ms(r.decision_p99_ms)}"),
        ("evaluation wall p50 / p99, ms", lambda r: f"{_ms(r.evaluation_p50_ms)} / {_ms(r.evaluation_p99_ms)}"),
        ("failed steps (API errors, bugs)", lambda r: str(r.failed_steps)),
        ("late evaluations since start (> 1 interval)", lambda r: str(r.late_evaluations)),
        ("apps not evaluated for 2 intervals (fast ones)", lambda r: f"{r.stale_apps} ({r.stale_fast_apps})"),
        ("apps OnSchedule=True at the end", lambda r: str(r.on_schedule_apps)),
        ("operator RSS / peak, MB", lambda r: f"{r.rss_mb:.0f} / {r.peak_rss_mb:.0f}"),
        ("operator CPU, % of a core", lambda r: f"{r.cpu_percent:.0f}"),
        ("API-server requests per evaluation", lambda r: "—" if r.api_requests_per_evaluation is None
         else f"{r.api_requests_per_evaluation:.1f}"),
    ]
    lines = ["| | " + " | ".join(f"run {i + 1}" for i in range(len(results))) + " |",
             "|---|" + "---:|" * len(results)]
    lines += [f"| {label} | " + " | ".join(cell(r) for r in results) + " |" for label, cell in rows]
    return "\n".join(lines)
