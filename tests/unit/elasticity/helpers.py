"""Fakes for the elasticity tests."""
from __future__ import annotations

from elasticity.model import JobObservation, StageMetrics


def stage(name="src", p=4, rate=1000.0, proc=None, busy=0.5, backlog=0.0, maxp=None, upstream=(), **kw):
    return StageMetrics(name=name, parallelism=p, input_rate=rate, processing_rate=rate if proc is None else proc,
                        busy_fraction=busy, backlog=backlog, max_parallelism=maxp, upstream=tuple(upstream), **kw)


def obs(*stages, t=0.0, lat=0.5, p99=1.0, job="j"):
    return JobObservation(job=job, timestamp=t, stages=list(stages), latency_avg_s=lat, latency_p50_s=lat,
                          latency_p99_s=p99)


def elastream_proposals(cfg, rates, p: int = 10, per_instance: float = 400.0) -> list:
    """Evaluate elastream every 30 s on a one-stage job of p instances of `per_instance` records/s, fed `rates` in turn
    (the parallelism never changes); every proposal."""
    from elasticity.policies.base import PolicyContext
    from elasticity.policies.elastream import ElastreamPolicy

    pol, mem, out = ElastreamPolicy(), {}, []
    for i, rate in enumerate(rates):
        t = 30.0 * (i + 1)
        o = obs(stage("src", p=p, rate=rate, busy=rate / (per_instance * p), maxp=360), t=t)
        out.append(pol.propose(PolicyContext(o, [o], cfg, t, mem)))
    return out
