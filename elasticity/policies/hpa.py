"""`hpa`: the Kubernetes HPA v2 algorithm on the busy fraction of each stage.

desired = ceil(current × utilization / target); no change while |utilization/target − 1| ≤ tolerance (10 %);
scale-up at most max(2×, +4) per step (HPA's default policy); scale-down to the highest recommendation of the
stabilization window (HPA's 300 s downscale stabilization).
"""
from __future__ import annotations

from elasticity.policies.base import PolicyContext, Proposal, ceil_eps, stage_bound


class HPAPolicy:
    name = "hpa"
    required_metrics = ("utilization",)

    def propose(self, ctx: PolicyContext) -> Proposal:
        cfg = ctx.config
        recs: dict[str, list] = ctx.memory.setdefault("recommendations", {})
        targets, inputs, parts = {}, {}, []
        for st in ctx.observation.stages:
            p = int(st.parallelism)
            u = st.utilization() or 0.0
            ratio = u / cfg.target_utilization
            inputs[f"{st.name}.utilization"] = round(u, 4)
            if abs(ratio - 1.0) <= cfg.hpa_tolerance:
                desired = p
            else:
                desired = ceil_eps(p * ratio)
            desired = max(cfg.min_parallelism, min(desired, stage_bound(st.max_parallelism, cfg)))
            window = [(t, d) for t, d in recs.get(st.name, []) if ctx.now - t < cfg.stabilization_window_s]
            window.append((ctx.now, desired))
            recs[st.name] = window
            if desired < p:
                desired = min(p, max(d for _, d in window))  # downscale stabilization
            elif desired > p:
                desired = min(desired, max(2 * p, p + 4))
            targets[st.name] = desired
            inputs[f"{st.name}.desired"] = float(desired)
            if desired != p:
                verb = "scale out" if desired > p else "scale in"
                parts.append(f"{verb} {st.name} {p}→{desired}: utilization {u:.0%} against target "
                             f"{cfg.target_utilization:.0%} (tolerance {cfg.hpa_tolerance:.0%})")
        if not parts:
            return Proposal(targets, f"steady: utilization within {cfg.hpa_tolerance:.0%} of "
                            f"{cfg.target_utilization:.0%} (or held by the downscale window)", inputs)
        return Proposal(targets, "; ".join(parts), inputs)
