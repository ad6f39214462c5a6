"""The oracle: perfect foresight, free rescales — the least parallelism that meets the target at each step.

At step t it knows the arrivals of the next `latency_target_s` seconds. Each stage gets the least parallelism
whose key-group-aware capacity carries their peak (propagated through selectivities) at the utilization ρ*
where its p99 sojourn uses no more than its share of 80 % of the latency target (ρ* lowered by twice the
capacity noise), plus its current queue drained within the latency target. Rescales are instantaneous and free. It bounds what any causal policy can reach.
"""
from __future__ import annotations


import numpy as np

from elasticity.policies.capacity import effective_parallelism
from elasticity.simulation.job import LN100, SimulatedJob


class Oracle:
    def __init__(self, job: SimulatedJob, latency_target_s: float, max_parallelism: int, min_parallelism: int = 1):
        self.job = job
        spec = job.spec
        dt = job.dt
        L = latency_target_s
        w = max(1, int(round(L / dt)))
        a = job.tl.arrivals
        # the peak of the arrivals over the next L seconds (a sliding maximum)
        from numpy.lib.stride_tricks import sliding_window_view

        padded = np.concatenate([a, np.full(w - 1, a[-1])])
        self.window_peak = sliding_window_view(padded, w).max(axis=1)
        S = len(spec.stages)
        budget = max(0.8 * L - sum(s.base_latency_s for s in spec.stages), 0.1 * L) / S
        margin = 1.0 + 2.0 * spec.capacity_noise
        # the job's own capacity model: a micro-batch stage loses its per-batch overhead
        self.rho = [min(0.98, max(0.5, 1.0 - LN100 / (s.capacity_per_instance * budget))) / margin
                    for s in spec.stages]
        self.scale = spec.input_shares()  # stage input per job input record
        self.L = L
        self.caps = []  # capacity table per stage: caps[i][p] for p in 0..max
        for s in spec.stages:
            top = min(max_parallelism, s.key_groups)
            self.caps.append(np.array([s.capacity_per_instance * effective_parallelism(p, s.key_groups, s.hot_share)
                                       for p in range(top + 1)]))
        self.min_p = min_parallelism

    def targets(self, k: int) -> dict[str, int]:
        out = {}
        for i, s in enumerate(self.job.spec.stages):
            need = self.window_peak[k] * self.scale[i] / self.rho[i] + self.job.Q[i] / self.L
            caps = self.caps[i]
            p = int(np.searchsorted(caps, need - 1e-9, side="left"))
            out[s.name] = max(self.min_p, min(p, len(caps) - 1))
        return out
