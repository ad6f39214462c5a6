"""The API's policy maps onto the core's PolicyConfig: durations in seconds, bounds intersected."""
import pytest

from elastream.api.policy import ElasticityPolicySpec
from elastream.api.streamapp import StreamAppSpec
from elastream.errors import UserError
from elastream.policy_config import to_policy_config
from tests.manifests import example


def test_example_policy_maps_to_seconds():
    policy = ElasticityPolicySpec.model_validate(example("ElasticityPolicy")["spec"])
    app = StreamAppSpec.model_validate(example("StreamApp")["spec"])
    cfg = to_policy_config(policy, app)
    assert (cfg.evaluation_interval_s, cfg.metrics_window_s, cfg.scale_down_delay_s) == (10, 60, 20)
    assert (cfg.min_parallelism, cfg.max_parallelism) == (1, 2)
    assert (cfg.scale_up_max_step, cfg.scale_down_max_step, cfg.stale_after_s) == (2, 1, 60)


def test_bounds_intersect_the_app_range():
    app = StreamAppSpec.model_validate(example("StreamApp")["spec"])  # executors 1..2
    cfg = to_policy_config(ElasticityPolicySpec.model_validate({"bounds": {"min": 2, "max": 8}}), app)
    assert (cfg.min_parallelism, cfg.max_parallelism) == (2, 2)
    with pytest.raises(UserError, match="does not overlap"):
        to_policy_config(ElasticityPolicySpec.model_validate({"bounds": {"min": 5, "max": 8}}), app)


def test_a_policy_that_sets_nothing_runs_the_core_with_the_defaults_the_benchmarks_measured():
    from elasticity.config import PolicyConfig

    app = StreamAppSpec.model_validate(example("StreamApp")["spec"])
    cfg, core = to_policy_config(ElasticityPolicySpec.model_validate({}), app), PolicyConfig()
    for name in ("algorithm", "mode", "detector", "latency_target_s", "target_utilization", "evaluation_interval_s",
                 "metrics_window_s", "stabilization_window_s", "catch_up_duration_s", "max_rescales_per_hour",
                 "scale_down_delay_s", "scale_up_max_step", "scale_down_max_step", "phi", "bottleneck_interval_s"):
        # (not staleness: metrics.staleAfter's 2m suits Prometheus' lag; the simulator's metrics are never stale)
        assert getattr(cfg, name) == getattr(core, name), name
