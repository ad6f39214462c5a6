"""Map the Kubernetes API (ElasticityPolicy + StreamApp) onto the core's PolicyConfig."""
from __future__ import annotations

from elastream.api.base import parse_duration
from elastream.api.policy import ElasticityPolicySpec
from elastream.api.streamapp import StreamAppSpec
from elastream.engines import engine_for
from elastream.errors import UserError
from elasticity.config import PolicyConfig


def parallelism_bounds(policy: ElasticityPolicySpec, app: StreamAppSpec) -> tuple[int, int]:
    """The engine's range for a stage (Spark: the executor range; Storm: 1..the largest maxParallelism) intersected
    with the policy's bounds."""
    r_min, r_max = engine_for(app).parallelism_range(app)
    lo, hi = r_min, r_max
    if policy.bounds:
        lo, hi = max(lo, policy.bounds.min), min(hi, policy.bounds.max)
    if lo > hi:
        raise UserError(f"spec.bounds {policy.bounds.min}..{policy.bounds.max} of the policy does not overlap "
                        f"the app's range {r_min}..{r_max}")
    return lo, hi


def to_policy_config(policy: ElasticityPolicySpec, app: StreamAppSpec) -> PolicyConfig:
    lo, hi = parallelism_bounds(policy, app)
    return PolicyConfig(**_core_fields(policy), min_parallelism=lo, max_parallelism=hi)


def policy_config_alone(policy: ElasticityPolicySpec) -> PolicyConfig:
    """The policy with no app to run (`elastream simulate --policy-file`): its own bounds, else the core's."""
    bounds = {"min_parallelism": policy.bounds.min, "max_parallelism": policy.bounds.max} if policy.bounds else {}
    return PolicyConfig(**_core_fields(policy), **bounds)


def _core_fields(policy: ElasticityPolicySpec) -> dict:
    return dict(
        algorithm=policy.algorithm,
        mode=policy.mode,
        detector=policy.detector,
        latency_target_s=parse_duration(policy.latency_target),
        target_utilization=policy.target_utilization,
        evaluation_interval_s=parse_duration(policy.evaluation_interval),
        metrics_window_s=parse_duration(policy.metrics_window),
        stale_after_s=parse_duration(policy.metrics.stale_after),
        scale_up_max_step=policy.scale_up.max_step,
        scale_down_max_step=policy.scale_down.max_step,
        stabilization_window_s=parse_duration(policy.stabilization_window),
        scale_down_delay_s=parse_duration(policy.scale_down.delay) if policy.scale_down.delay else None,
        max_rescales_per_hour=policy.max_rescales_per_hour,
        catch_up_duration_s=parse_duration(policy.catch_up_duration),
        phi=policy.mestream.phi,
        bottleneck_interval_s=parse_duration(policy.mestream.bottleneck_interval),
    )
