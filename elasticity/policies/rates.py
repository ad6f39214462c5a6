"""Rate arithmetic shared by the rate-based planners (DS2 and elastream)."""
from __future__ import annotations

from dataclasses import dataclass

from elasticity.model import JobObservation


@dataclass
class StageRates:
    name: str
    parallelism: int
    utilization: float
    true_rate: float  # records/s at 100 % busy, whole stage (processing rate / busy fraction)
    target_input_rate: float  # records/s the stage must absorb when every upstream stage keeps up
    selectivity: float
    backlog: float


def target_rates(obs: JobObservation, source_rates: dict[str, float] | None = None) -> list[StageRates]:
    """DS2's propagation: a source must absorb what is produced into it; any other stage what its upstream
    stages will emit once they keep up (their target input × their selectivity) — not what they emit now,
    which a bottleneck upstream may be throttling. `source_rates` overrides the sources' input rates
    (e.g. with a forecast)."""
    out: dict[str, StageRates] = {}
    names = {s.name for s in obs.stages}
    for s in obs.stages:
        ups = [u for u in s.upstream if u in names]
        if ups:
            target_in = sum(out[u].target_input_rate * out[u].selectivity for u in ups if u in out)
        else:
            target_in = float((source_rates or {}).get(s.name, s.input_rate or 0.0))
        u = s.utilization() or 0.0
        out[s.name] = StageRates(
            name=s.name,
            parallelism=int(s.parallelism),
            utilization=u,
            true_rate=s.true_processing_rate() or 0.0,
            target_input_rate=max(target_in, 0.0),
            selectivity=s.selectivity(),
            backlog=max(float(s.backlog or 0.0), 0.0),
        )
    return list(out.values())
