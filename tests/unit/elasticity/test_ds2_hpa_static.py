import math

from elasticity.config import PolicyConfig
from elasticity.policies import get_policy
from elasticity.policies.base import PolicyContext, align_to_max_parallelism
from elasticity.policies.ds2 import ds2_parallelism
from elasticity.errors import InputError
from tests.unit.elasticity.helpers import obs, stage
import pytest


def ctx(o, **cfg):
    return PolicyContext(o, [o], PolicyConfig(**cfg), now=o.timestamp)


def test_ds2_formula_with_backlog_restart_and_target_utilization():
    # true rate 1200/s on 2 instances; target 2900/s; backlog 30k over 300 s; restart 30 s
    new, cap = ds2_parallelism(2, 1200.0, 2900.0, 30000.0, target_utilization=0.7, catch_up_duration_s=300,
                               restart_time_s=30, max_scale_down_factor=0.6, min_p=1, max_p=64, key_groups=None)
    assert cap == pytest.approx(30000 / 300 + 2900 * 30 / 300 + 2900 / 0.7)
    assert new == math.ceil(2 * cap / 1200)


def test_ds2_one_step_for_the_whole_graph_uses_target_rates_not_throttled_ones():
    src = stage("src", p=2, rate=2900, proc=1000, busy=1.0, maxp=None)
    mid = stage("map", p=4, rate=1000, proc=1000, busy=0.3, upstream=["src"], output_rate=500)
    sink = stage("sink", p=1, rate=500, proc=500, busy=0.5, upstream=["map"])
    p = get_policy("ds2").propose(ctx(obs(src, mid, sink), restart_time_s=0, catch_up_duration_s=300))
    # map looks idle only because src throttles it: at 2.9k/s it needs ceil(4 × 2900 / 0.7 / 3333) = 5
    assert p.targets == {"src": math.ceil(2 * 2900 / 0.7 / 1000), "map": 5, "sink": math.ceil(1 * 1450 / 0.7 / 1000)}
    assert "scale out src 2→9" in p.reason and "cannot carry 2.9k/s" in p.reason


def test_ds2_scale_down_is_limited_and_aligned_to_max_parallelism():
    s = stage("src", p=40, rate=100, proc=100, busy=0.05, maxp=360)
    p = get_policy("ds2").propose(ctx(obs(s)))
    assert p.targets["src"] == 18  # at most 60 % down: ceil(40 × 0.4) = 16 → aligned up to 18 (divides 360)
    assert align_to_max_parallelism(7, 128, 128) == 8
    assert align_to_max_parallelism(7, None, 128) == 7


def test_ds2_keeps_parallelism_within_the_utilization_boundary():
    s = stage("src", p=10, rate=700, proc=700, busy=0.72)
    p = get_policy("ds2").propose(ctx(obs(s)))
    assert p.targets == {"src": 10} and p.reason.startswith("steady")


def test_ds2_at_a_stages_max_parallelism_says_so_instead_of_steady():
    s = stage("count", p=2, rate=495, proc=250, busy=1.0, maxp=2)
    p = get_policy("ds2").propose(ctx(obs(s)))
    assert p.targets == {"count": 2}
    assert p.reason.startswith("at the bounds: count at its max parallelism 2 cannot carry 495/s"), p.reason
    assert p.at_bounds


def test_hpa_tolerance_and_formula():
    assert get_policy("hpa").propose(ctx(obs(stage(p=10, busy=0.75)))).targets == {"src": 10}  # within 10 %
    assert get_policy("hpa").propose(ctx(obs(stage(p=10, busy=0.91)))).targets == {"src": 13}  # ceil(10 × 1.3)


def test_hpa_scale_down_stabilization_takes_the_highest_recent_recommendation():
    pol = get_policy("hpa")
    mem = {}
    o1 = obs(stage(p=10, busy=0.56), t=0)  # desired 8
    c1 = PolicyContext(o1, [o1], PolicyConfig(), now=0, memory=mem)
    assert pol.propose(c1).targets["src"] == 8
    o2 = obs(stage(p=10, busy=0.2), t=60)  # desired 3, but 8 was recommended 60 s ago
    assert pol.propose(PolicyContext(o2, [o2], PolicyConfig(), now=60, memory=mem)).targets["src"] == 8
    o3 = obs(stage(p=10, busy=0.2), t=400)  # the 8 left the 300 s window
    assert pol.propose(PolicyContext(o3, [o3], PolicyConfig(), now=400, memory=mem)).targets["src"] == 3


def test_static_never_changes_and_unknown_policy_lists_valid_names():
    o = obs(stage(p=3, busy=1.0, backlog=1e6))
    assert get_policy("static").propose(ctx(o)).targets == {"src": 3}
    with pytest.raises(InputError, match="valid: elastream, ds2, mestream, hpa, rl, static"):
        get_policy("nope")
