"""elastream's item 17 (issue 14): on a falling load, a worthwhile scale-in waits while the one the trend promises
within `elastream_fall_wait_s` saves `elastream_fall_gain` × as much, so a decline takes one scale-in, not two; a
load that fell in a step (a short history) does not wait."""
from elasticity.config import PolicyConfig
from tests.unit.elasticity.helpers import elastream_proposals

PER_INSTANCE = 400.0
P = 10
SAVING = {"elastream_min_saving": 0.2}  # a scale-in must save 2 of the 10 instances


def _proposals(cfg, rates):
    return elastream_proposals(cfg, rates, P, PER_INSTANCE)


def _first_scale_in(props):
    return next((i, p) for i, p in enumerate(props) if p.targets["src"] < P)


# 3800/s falling by 1/s for 50 minutes: a scale-in saving 20 % (10 → 8 at 90 % of 400/s) pays from about 2880/s,
# after half an hour of history; ten minutes of the same trend later, 10 → 7
DECLINE = [3800.0 - 30.0 * i for i in range(100)]


def test_a_falling_load_scales_in_once_for_the_larger_saving():
    props = _proposals(PolicyConfig(**SAVING), DECLINE)
    eager_at, eager = _first_scale_in(_proposals(PolicyConfig(elastream_fall_wait_s=0, **SAVING), DECLINE))
    assert eager.targets["src"] == 8, eager.reason  # without item 17 the first scale-in saves 2
    waited = props[eager_at]
    assert waited.targets["src"] == P and "the load falls" in waited.reason, waited.reason
    at, first = _first_scale_in(props)
    assert at > eager_at and first.targets["src"] <= 7, first.reason  # later, and larger


def test_a_load_that_fell_in_a_step_scales_in_without_waiting():
    step = [3800.0] * 8 + [2000.0] * 12  # a short history: a trend down over it is the step, not a decline
    at, first = _first_scale_in(_proposals(PolicyConfig(**SAVING), step))
    assert first.targets["src"] < P and "falls" not in first.reason, first.reason


def test_a_fall_is_extrapolated_no_further_than_it_was_seen_and_a_rise_not_at_all():
    from elasticity.policies.forecast import RateForecast

    t = [30.0 * i for i in range(20)]  # 570 s of a load falling by 1/s
    fc = RateForecast().fit(t, [3000.0 - x for x in t], now=t[-1])
    assert abs(fc.after_fall(300.0, 0.0) - (fc.recent_ - 300.0)) < 1.0
    assert abs(fc.after_fall(3600.0, 0.0) - (fc.recent_ - 570.0)) < 1.0  # capped at the span
    rising = RateForecast().fit(t, [1000.0 + x for x in t], now=t[-1])
    assert rising.after_fall(600.0, 0.0) == rising.recent_
