"""elastream's scale-in of a small saving once it has been wanted long (item 6): a low load that has lasted is
likely to last, so a saving under `elastream_min_saving` outweighs the rescale — but only for a smaller job that
still carries every level recalled (a dip below a recent high is no such load)."""
from elasticity.config import PolicyConfig
from elasticity.policies.base import PolicyContext
from elasticity.policies.elastream import ElastreamPolicy
from tests.unit.elasticity.helpers import obs, stage


def _first_scale_in(cfg, rates, p=6):
    """Evaluations every 30 s at rates[i] records/s on p instances of 400/s: (the time of the first scale-in
    proposed, its reason), or (None, None)."""
    pol, mem, history = ElastreamPolicy(), {}, []
    for i, rate in enumerate(rates):
        t = 30.0 * (i + 1)
        o = obs(stage("src", p=p, rate=rate, busy=rate / (400.0 * p), maxp=360), t=t)
        history.append(o)
        prop = pol.propose(PolicyContext(o, history[-10:], cfg, t, mem))
        if prop.targets["src"] < p:
            return t, prop.reason
    return None, None


AGED = PolicyConfig(elastream_min_saving=0.27, elastream_min_saving_age_s=900.0, elastream_min_saving_floor=0.1)


def test_a_small_saving_wanted_long_enough_is_taken():
    # 1,500/s on 6 instances of 400/s: 5 carry it at 90 %, a saving of 1/6 (17 %) < 27 %. Wanted from the sixth
    # scrape (180 s) on, it passes once 27 % × 900 s / age ≤ 17 %: after ~1,460 s of wanting it
    t, reason = _first_scale_in(AGED, [1500.0] * 120)
    assert t is not None and 1500.0 <= t <= 1800.0, t
    assert "scale in src 6→5" in reason and "saves 17%: under 27%, but wanted for" in reason, reason
    assert _first_scale_in(AGED.model_copy(update={"elastream_min_saving_age_s": 0.0}), [1500.0] * 120) == (None, None)


def test_a_dip_below_a_level_recalled_gets_no_such_scale_in():
    # 2,000/s for 20 minutes (6 instances needed), then 1,500/s for an hour: the recalled 2,000/s still needs 6
    assert _first_scale_in(AGED, [2000.0] * 40 + [1500.0] * 120) == (None, None)
