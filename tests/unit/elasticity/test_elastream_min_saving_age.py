"""elastream's scale-in of a small saving once it has been wanted long (item 6): a low load that has lasted is
likely to last, so a saving under `elastream_min_saving` outweighs the rescale — but only for a smaller job that
still carries every level recalled (a dip below a recent high is no such load)."""
from elasticity.config import PolicyConfig
from elasticity.policies.base import PolicyContext
from elasticity.policies.elastream import ElastreamPolicy
from tests.unit.elasticity.helpers import obs, stage


def _first_scale_in(cfg, rates, p=6):
    """Evaluations every 30 s at rates[i] records/s on p instances of 400/s (a rate over their capacity is
    processed at it, the rest queued): (the time of the first scale-in proposed, its reason), or (None, None)."""
    pol, mem, history, queued = ElastreamPolicy(), {}, [], 0.0
    for i, rate in enumerate(rates):
        t = 30.0 * (i + 1)
        done = min(rate, 400.0 * p)
        queued = max(queued + 30.0 * (rate - done), 0.0) if rate > done else 0.0
        o = obs(stage("src", p=p, rate=rate, proc=done, busy=done / (400.0 * p), backlog=queued, maxp=360), t=t)
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


def test_a_level_the_job_never_carried_does_not_hold_a_small_scale_in_back():
    # 3,000/s for 10 minutes on 6 instances of 400/s (a crowd they could not carry), then 1,500/s: a level over the
    # job needs a scale-out from it as from a smaller one, so the 17 % scale-in is taken once wanted long enough
    # (the queue the crowd left drained at once: this fake job has no memory of it)
    t, reason = _first_scale_in(AGED, [3000.0] * 20 + [1500.0] * 120)
    assert t is not None and "scale in src 6→5" in reason, (t, reason)


def test_the_wish_outlives_an_evaluation_that_saves_nothing_and_restarts_after_a_rescale():
    cfg = AGED
    mem: dict = {}

    def at(t: float, last_rescale_at: float | None = None) -> PolicyContext:
        return PolicyContext(obs(stage("src"), t=t), [], cfg, t, mem, last_rescale_at)

    assert ElastreamPolicy._min_saving(at(0.0), 2) == 0.27
    ElastreamPolicy._min_saving(at(30.0), 0)  # the noise's peak: this evaluation saves nothing
    assert mem["scale_in_wanted_since"] == 0.0
    assert ElastreamPolicy._min_saving(at(2430.0), 2) == 0.27 * 900.0 / 2430.0
    ElastreamPolicy._min_saving(at(2460.0, 2450.0), 2)  # a rescale since: the wish starts again
    assert mem["scale_in_wanted_since"] == 2460.0
