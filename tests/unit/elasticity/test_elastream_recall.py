"""elastream's memory of levels (issue 14): a scale-out sizes for the level the load reached before, a trend is not
extrapolated past a high it turned at before, and the capacity a scale-out added is kept while the load holds."""
from elasticity.config import PolicyConfig
from elasticity.policies.base import PolicyContext
from elasticity.policies.elastream import ElastreamPolicy
from elasticity.policies.forecast import RateForecast
from tests.unit.elasticity.helpers import obs, stage

PER_INSTANCE = 400.0


def _run(cfg, rates, p, mem=None, t0=0.0, rescaled_at=None):
    """Evaluate elastream every 30 s on a one-stage job; (last proposal, memory)."""
    pol, mem = ElastreamPolicy(), ({} if mem is None else mem)
    prop = None
    for i, rate in enumerate(rates):
        t = t0 + 30.0 * (i + 1)
        o = obs(stage("src", p=p, rate=rate, busy=rate / (PER_INSTANCE * p), maxp=360), t=t)
        prop = pol.propose(PolicyContext(o, [o], cfg, t, mem, last_rescale_at=rescaled_at))
    return prop, mem


def test_a_scale_out_sizes_for_the_level_reached_before_not_the_first_step_of_the_return():
    # 30 min at 3000/s, 60 min at 1000/s (job scaled in to 3), then the load comes back: 1400/s overloads 3
    history = [3000.0] * 60 + [1000.0] * 120
    back = [1400.0] * 2
    with_recall, _ = _run(PolicyConfig(), history + back, p=3)
    without, _ = _run(PolicyConfig(elastream_recall_s=0), history + back, p=3)
    assert without.targets["src"] * PER_INSTANCE < 3000.0  # sized for the 1400/s it sees
    assert with_recall.targets["src"] * PER_INSTANCE >= 3000.0  # sized for where the load was
    # beyond the recall window the old level is forgotten
    old, _ = _run(PolicyConfig(elastream_recall_s=1800.0), history + back, p=3)
    assert old.targets["src"] == without.targets["src"]


def test_a_trend_is_not_extrapolated_past_a_high_seen_before():
    t = [30.0 * i for i in range(60)]
    rising = [1000.0 + 1.0 * x for x in t]  # +1 record/s per second: 2770/s at the end
    fc = RateForecast().fit(t, rising, now=t[-1])
    free = fc.peak(1200.0, z=0.0)
    assert free > 3900.0  # 1200 s more of the slope
    assert abs(fc.peak(1200.0, z=0.0, known_high=3000.0) - 3000.0) < 1.0  # turns where it turned before
    assert fc.peak(1200.0, z=0.0, known_high=2000.0) == free  # past the old high: new ground, the trend holds


def test_a_scale_out_is_kept_while_the_load_holds_and_given_back_when_it_falls():
    cfg = PolicyConfig(scale_down_delay_s=0)
    mem = {"rescale_times": [], "total_parallelism": 4}
    # the job was just scaled out 4 → 10 at 2000/s (more than 2000/s needs: a recalled level)
    prop, mem = _run(cfg, [2000.0] * 12, p=10, mem=mem, rescaled_at=30.0)
    assert mem["scaled_out"][0] == 30.0
    assert prop.targets["src"] == 10 and "is kept" in prop.reason
    # the load falls below the rate of the scale-out: the scale-in may come
    fell, _ = _run(cfg, [1200.0] * 12, p=10, mem=mem, t0=360.0, rescaled_at=30.0)
    assert fell.targets["src"] < 10


def test_the_hold_keeps_the_load_the_scale_out_was_proposed_for_not_the_one_seen_after():
    # a scale-out proposed at the end of a 3000/s phase is seen realized by an evaluation in the 500/s one: the
    # hold must compare with 3000/s (the load that called for it), or it keeps the capacity for 500/s
    cfg = PolicyConfig(scale_down_delay_s=0)
    prop, mem = _run(cfg, [500.0] * 12 + [3000.0] * 2, p=2)
    assert prop.targets["src"] > 2 and mem["scale_out_asked"][1]["src"] > 2000.0
    asked_at = mem["scale_out_asked"][0]
    mem.update(rescale_times=[], total_parallelism=2)
    low, mem = _run(cfg, [500.0] * 12, p=prop.targets["src"], mem=mem, t0=asked_at, rescaled_at=asked_at)
    assert mem["scaled_out"][1]["src"] > 2000.0 and "scale_out_asked" not in mem
    assert low.targets["src"] < prop.targets["src"] and "is kept" not in low.reason
    # a rescale the policy did not propose (kubectl scale) is held for the load seen after it
    mem2 = {"rescale_times": [], "total_parallelism": 2, "scale_out_asked": [0.0, {"src": 3000.0}]}
    _, mem2 = _run(cfg, [500.0], p=prop.targets["src"], mem=mem2, t0=1000.0, rescaled_at=1000.0)
    assert mem2["scaled_out"][1]["src"] == 500.0
