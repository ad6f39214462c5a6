"""elastream drains a backlog that alone breaks the latency target within elastream_slo_catch_up_s."""
import pytest

from elasticity.config import PolicyConfig
from elasticity.policies.base import PolicyContext
from elasticity.policies.elastream import ElastreamPolicy, catch_up_s
from tests.unit.elasticity.helpers import obs, stage


def test_catch_up_is_short_only_for_a_backlog_worth_more_than_the_latency_target():
    cfg = PolicyConfig(latency_target_s=5.0, catch_up_duration_s=300.0, elastream_slo_catch_up_s=60.0)
    assert catch_up_s(4_000.0, 1000.0, cfg) == 300.0  # 4 s of input: within the target
    assert catch_up_s(6_000.0, 1000.0, cfg) == 60.0  # 6 s: every second it lasts is a violation
    assert catch_up_s(None, 1000.0, cfg) == 300.0
    assert catch_up_s(6_000.0, 0.0, cfg) == 300.0
    assert catch_up_s(6_000.0, 1000.0, cfg.model_copy(update={"elastream_slo_catch_up_s": 900.0})) == 300.0


@pytest.mark.parametrize("slo_catch_up, expected", [(60.0, 13), (300.0, 12)])
def test_a_surge_scales_out_enough_to_drain_its_backlog_quickly(slo_catch_up, expected):
    # 1,500 → 4,000 records/s on 6 instances of 400/s: a 50k backlog (12.5 s of input) after 30 s
    cfg = PolicyConfig(elastream_slo_catch_up_s=slo_catch_up)
    o = obs(stage("src", p=6, rate=4000.0, proc=2400.0, busy=1.0, backlog=50_000.0, maxp=360), t=30.0)
    prop = ElastreamPolicy().propose(PolicyContext(o, [o], cfg, 30.0, {}))
    # planned: 4,000/0.95 + 50,000/catch-up, over 400/s per instance, aligned to 360 key groups
    assert prop.targets["src"] == expected
    assert "scale out src 6→" in prop.reason
