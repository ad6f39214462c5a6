"""`static`: never changes anything (the baseline of a job without elasticity)."""
from __future__ import annotations

from elasticity.policies.base import PolicyContext, Proposal


class StaticPolicy:
    name = "static"
    required_metrics: tuple[str, ...] = ()

    def propose(self, ctx: PolicyContext) -> Proposal:
        return Proposal(targets=ctx.observation.parallelism, reason="static policy: parallelism is fixed")
