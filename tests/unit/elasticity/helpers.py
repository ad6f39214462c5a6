"""Fakes for the elasticity tests."""
from __future__ import annotations

from elasticity.model import JobObservation, StageMetrics


def stage(name="src", p=4, rate=1000.0, proc=None, busy=0.5, backlog=0.0, maxp=None, upstream=(), **kw):
    return StageMetrics(name=name, parallelism=p, input_rate=rate, processing_rate=rate if proc is None else proc,
                        busy_fraction=busy, backlog=backlog, max_parallelism=maxp, upstream=tuple(upstream), **kw)


def obs(*stages, t=0.0, lat=0.5, p99=1.0, job="j"):
    return JobObservation(job=job, timestamp=t, stages=list(stages), latency_avg_s=lat, latency_p50_s=lat,
                          latency_p99_s=p99)
