"""An accelerating rise read from its recent first differences (RateForecast(recent_s)): the trend window's Theil–Sen
slope lags a rise that began late in it; a step or noise is no such rise."""
import numpy as np
import pytest

from elasticity.policies.forecast import RateForecast

T = np.arange(61) * 30.0  # 30 min of 30-s scrapes, now = the last


def _fit(y, recent_s=600.0):
    return RateForecast(recent_s).fit(T, np.asarray(y, dtype=float), T[-1])


def test_a_rise_that_began_late_in_the_window_is_read_at_its_own_pace():
    y = np.where(T < 1200, 1000.0, 1000.0 + (T - 1200) * 1.0)  # flat 20 min, then +60/min for 10 min
    old, new = _fit(y, recent_s=0.0), _fit(y)
    assert old.slope_ * 60 < 30  # the window's median pairwise slope: mostly the flat night
    assert new.slope_ * 60 == pytest.approx(60.0)


def test_a_step_is_no_recent_rise():
    y = np.where(T < 1500, 1000.0, 1400.0)  # a step 5 min ago: one rising difference
    assert _fit(y).slope_ == _fit(y, recent_s=0.0).slope_


def test_noise_is_no_recent_rise():
    rng = np.random.default_rng(7)
    for _ in range(50):
        y = 1000.0 * (1 + 0.1 * rng.standard_normal(len(T)))
        assert _fit(y).slope_ == _fit(y, recent_s=0.0).slope_


def test_a_fall_is_left_to_the_window():
    y = np.where(T < 1200, 2000.0, 2000.0 - (T - 1200) * 1.0)
    assert _fit(y).slope_ == _fit(y, recent_s=0.0).slope_ <= 0  # only a rise is read from the recent differences
