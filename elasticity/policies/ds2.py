"""`ds2`: rate-based planning as the Flink Kubernetes operator autoscaler does it (DS2, OSDI'18).

Per stage: true processing rate = processing rate / busy fraction; target capacity = backlog / catch-up
duration + target rate × restart time / catch-up duration + target rate / target utilization; new
parallelism = ceil(p × capacity / true rate), scale-down limited to max_scale_down_factor per step, aligned
to the stage's max parallelism (key groups / shuffle partitions / Storm tasks). All stages in one step.
"""
from __future__ import annotations

from elasticity.model import fmt_count, fmt_rate
from elasticity.policies.base import (PolicyContext, Proposal, align_to_max_parallelism, at_bounds_reason, ceil_eps,
                                     stage_bound)
from elasticity.policies.rates import target_rates


def ds2_parallelism(
    p: int,
    true_rate: float,
    target_rate: float,
    backlog: float,
    *,
    target_utilization: float,
    catch_up_duration_s: float,
    restart_time_s: float,
    max_scale_down_factor: float,
    min_p: int,
    max_p: int,
    key_groups: int | None,
) -> tuple[int, float]:
    """(new parallelism, target capacity in records/s) for one stage."""
    capacity = (
        backlog / catch_up_duration_s
        + target_rate * restart_time_s / catch_up_duration_s
        + target_rate / target_utilization
    )
    if true_rate <= 0:
        return p, capacity
    raw = ceil_eps(p * capacity / true_rate)
    floor_down = ceil_eps(p * (1.0 - max_scale_down_factor))
    new = max(raw, floor_down, min_p)
    new = min(new, max_p)
    new = min(align_to_max_parallelism(new, key_groups, max_p), max_p)
    return max(new, min_p), capacity


class DS2Policy:
    name = "ds2"
    required_metrics = ("input_rate", "processing_rate", "utilization")

    def propose(self, ctx: PolicyContext) -> Proposal:
        cfg = ctx.config
        obs = ctx.observation
        targets: dict[str, int] = {}
        inputs: dict[str, float] = {}
        parts: list[str] = []
        bounded: list[str] = []  # stages that need more than their bound allows
        for st, sr in zip(obs.stages, target_rates(obs)):
            hi = stage_bound(st.max_parallelism, cfg)
            p = sr.parallelism
            inputs[f"{sr.name}.true_rate"] = round(sr.true_rate, 3)
            inputs[f"{sr.name}.target_rate"] = round(sr.target_input_rate, 3)
            inputs[f"{sr.name}.utilization"] = round(sr.utilization, 4)
            inputs[f"{sr.name}.backlog"] = round(sr.backlog, 1)
            # utilization the stage would have at the target rate
            needed_util = sr.target_input_rate / sr.true_rate if sr.true_rate > 0 else float("inf")
            caught_up = sr.backlog <= sr.target_input_rate * cfg.effective_backlog_tolerance_s
            if caught_up and abs(needed_util - cfg.target_utilization) <= cfg.utilization_boundary:
                targets[sr.name] = p
                continue
            new, capacity = ds2_parallelism(
                p, sr.true_rate, sr.target_input_rate, sr.backlog,
                target_utilization=cfg.target_utilization,
                catch_up_duration_s=cfg.catch_up_duration_s,
                restart_time_s=cfg.restart_time_s,
                max_scale_down_factor=cfg.max_scale_down_factor,
                min_p=cfg.min_parallelism, max_p=hi, key_groups=st.max_parallelism,
            )
            inputs[f"{sr.name}.target_capacity"] = round(capacity, 3)
            targets[sr.name] = new
            if new == p == hi and sr.true_rate > 0 and capacity > sr.true_rate:
                bounded.append(f"{sr.name} at its max parallelism {hi} cannot carry {fmt_rate(sr.target_input_rate)}")
            if new != p:
                verb = "scale out" if new > p else "scale in"
                back = f" + backlog {fmt_count(sr.backlog)}" if sr.backlog > 0 and new > p else ""
                if new > p:
                    why = (f"true processing rate {fmt_rate(sr.true_rate)} at {cfg.target_utilization:.0%} target "
                           f"utilization cannot carry {fmt_rate(sr.target_input_rate)}{back}")
                else:
                    why = (f"true processing rate {fmt_rate(sr.true_rate)} needs only {fmt_rate(capacity)} "
                           f"of capacity for {fmt_rate(sr.target_input_rate)} at {cfg.target_utilization:.0%}")
                parts.append(f"{verb} {sr.name} {p}→{new}: {why}")
        if not parts and bounded:
            return Proposal(targets, at_bounds_reason(bounded), inputs, at_bounds=True)
        if not parts:
            return Proposal(targets, "steady: every stage within target utilization "
                            f"{cfg.target_utilization:.0%} ± {cfg.utilization_boundary:.0%}", inputs)
        return Proposal(targets, "; ".join(parts), inputs)
