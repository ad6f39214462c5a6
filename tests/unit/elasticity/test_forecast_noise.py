"""RateForecast's noise is relative (the robust std of the log rate's differences, times the level): a load's
noise grows with it, so a window half in a flash crowd must not lend the level after it the crowd's noise."""
import numpy as np

from elasticity.policies.forecast import RateForecast


def _noisy(level: float, n: int, rng) -> list[float]:
    return list(level * (1.0 + 0.03 * rng.standard_normal(n)))


def test_noise_after_a_crowd_is_that_of_the_level_after_it():
    rng = np.random.default_rng(7)
    low = _noisy(1800.0, 60, rng)
    after_crowd = _noisy(5400.0, 30, rng) + low[:30]
    t = [30.0 * i for i in range(60)]
    quiet = RateForecast().fit(t, low, now=t[-1])
    mixed = RateForecast().fit(t, after_crowd, now=t[-1])
    assert 0.7 * quiet.noise_ < mixed.noise_ < 1.3 * quiet.noise_, (quiet.noise_, mixed.noise_)


def test_noise_scales_with_the_level():
    t = [30.0 * i for i in range(60)]
    noise = [RateForecast().fit(t, _noisy(level, 60, np.random.default_rng(3)), now=t[-1]).noise_
             for level in (1000.0, 4000.0)]
    assert abs(noise[1] / noise[0] - 4.0) < 0.01, noise
    assert RateForecast().fit(t, [0.0] * 60, now=t[-1]).noise_ == 0.0
