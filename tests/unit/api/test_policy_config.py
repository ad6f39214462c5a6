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
