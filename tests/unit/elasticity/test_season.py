"""The seasonal forecast (item 23): a period read from the autocorrelation of bucket means, and what the load did one
period ago just ahead of now."""
import numpy as np

from elasticity.policies.season import SeasonalForecast, bucket_means

STEP = 120.0


def _days(n_days: float, period: float = 3600.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    t = np.arange(0.0, n_days * period, STEP)
    rng = np.random.default_rng(seed)
    return t, 1000.0 + 500.0 * np.sin(2 * np.pi * t / period) + rng.normal(0.0, 50.0, len(t))


def test_a_repeating_load_shows_its_period():
    t, y = _days(4)
    fc = SeasonalForecast().fit(t, y)
    assert fc.period_ == 3600.0
    assert fc.corr_ > 0.9


def test_the_period_is_the_shortest_lag_not_a_multiple():
    t, y = _days(6, period=2400.0)
    assert SeasonalForecast().fit(t, y).period_ == 2400.0


def test_fewer_than_two_periods_seen_is_no_period():
    t, y = _days(1.8)
    assert SeasonalForecast().fit(t, y).period_ is None


def test_a_trend_noise_and_random_bursts_have_no_period():
    t = np.arange(0.0, 4 * 3600.0, STEP)
    rng = np.random.default_rng(1)
    assert SeasonalForecast().fit(t, 1000.0 + 0.1 * t + rng.normal(0, 50, len(t))).period_ is None
    assert SeasonalForecast().fit(t, 1000.0 + rng.normal(0, 200, len(t))).period_ is None
    bursts = np.where(rng.random(len(t)) < 0.3, 2500.0, 1000.0)
    assert SeasonalForecast().fit(t, bursts).period_ is None
    assert SeasonalForecast().fit(t, np.full(len(t), 1000.0)).period_ is None
    crowd = 1000.0 + rng.normal(0, 30, len(t)) + np.where((t > 5000.0) & (t < 6800.0), 3000.0, 0.0)
    assert SeasonalForecast().fit(t, crowd).period_ is None  # one crowd is no pattern


def test_the_peak_ahead_is_what_the_load_did_a_period_ago_scaled_to_its_level_now():
    t, y = _days(3)
    fc = SeasonalForecast().fit(t, y)
    now = t[-1] + STEP  # the next bucket: 3 days of a sine end at its phase 0, rising
    ahead = fc.peak(900.0)
    then = (t >= now - 3600.0) & (t <= now - 3600.0 + 900.0)
    assert abs(ahead - y[then].max()) < 0.15 * y[then].max()
    assert ahead > y[-1] + 200.0  # the rise a period ago is what a scale-in now must carry
    half = SeasonalForecast().fit(t, np.concatenate([y[:-5], y[-5:] / 2.0]))
    assert abs(half.period_ - 3600.0) <= STEP  # the halved end moves the peak by at most a bucket
    assert half.peak(900.0) < 0.7 * ahead  # the level now halved: the rise expected is halved too


def test_no_period_no_peak():
    t = np.arange(0.0, 4 * 3600.0, STEP)
    assert SeasonalForecast().fit(t, np.full(len(t), 500.0)).peak(600.0) is None


def test_bucket_means_fill_short_gaps_evenly_and_drop_what_a_long_one_cuts_off():
    t, y = bucket_means([[0.0, 200.0, 2], [120.0, 300.0, 3], [480.0, 400.0, 2]], STEP)
    assert list(t) == [0.0, 120.0, 240.0, 360.0, 480.0]
    assert list(y) == [100.0, 100.0, 133.33333333333334, 166.66666666666669, 200.0]
    t, y = bucket_means([[0.0, 200.0, 2], [120.0, 300.0, 3], [600.0, 400.0, 2], [720.0, 300.0, 1]], STEP)
    assert list(t) == [600.0, 720.0] and list(y) == [200.0, 300.0]  # three buckets missing: a restart, not load
    assert bucket_means([], STEP)[0].size == 0


def test_the_level_now_and_then_are_the_same_buckets_a_period_apart():
    t = np.arange(0.0, 3 * 3600.0, STEP)
    y = np.where((t % 3600.0) < 1800.0, 1000.0, 2000.0)  # a square wave; the last bucket ends a high half
    fc = SeasonalForecast().fit(t, y)
    assert fc.period_ == 3600.0
    assert fc.peak(600.0) == 1000.0  # the low half follows, as a period ago, at the same level (ratio 1)


def test_a_scale_in_just_before_a_rise_the_load_repeats_carries_that_rise():
    from elasticity.config import PolicyConfig
    from tests.unit.elasticity.helpers import elastream_proposals

    # an hour's period: 40 min at 1,000/s, 20 at 3,000/s; the third low phase, 5 minutes before its end
    rates = ([1000.0] * 80 + [3000.0] * 40) * 2 + [1000.0] * 70
    plain = elastream_proposals(PolicyConfig(), rates, p=10)[-1]
    seasonal = elastream_proposals(PolicyConfig(elastream_season_s=86400.0), rates, p=10)[-1]
    assert plain.targets["src"] < 5  # 1,000/s on 400/s instances
    assert seasonal.targets["src"] >= 8  # what 3,000/s needs: the rise a period ago is 5 minutes ahead
    early = elastream_proposals(PolicyConfig(elastream_season_s=86400.0), rates[:-20], p=10)[-1]
    assert early.targets["src"] < 5  # 15 minutes before the rise: the low phase is worth its scale-in


def test_the_memory_survives_json_and_a_source_that_went_is_forgotten():
    import json

    from elasticity.config import PolicyConfig
    from elasticity.policies.base import PolicyContext
    from elasticity.policies.elastream import ElastreamPolicy
    from tests.unit.elasticity.helpers import obs, stage

    cfg = PolicyConfig(elastream_season_s=86400.0, elastream_surprise_headroom=0.05)
    rates = ([1000.0] * 80 + [3000.0] * 40) * 2 + [1000.0] * 70

    def run(round_trip: bool, name=lambda i: "src") -> tuple[list, dict]:
        pol, mem, out = ElastreamPolicy(), {}, []
        for i, rate in enumerate(rates):
            t = 30.0 * (i + 1)
            o = obs(stage(name(i), p=10, rate=rate, busy=rate / 4000.0, maxp=360), t=t)
            out.append(pol.propose(PolicyContext(o, [o], cfg, t, mem)).targets)
            if round_trip:
                mem = json.loads(json.dumps(mem))
        return out, mem

    assert run(True)[0] == run(False)[0]
    _, mem = run(False, name=lambda i: "old" if i < 100 else "new")
    assert set(mem["season"]) == {"new"}
