"""Robust views of a source's rate for elastream: level, trend and noise (`RateForecast`), and the short bursts
it has shown (`burst_ratios`, `burst_factor`). Plain numbers in and out; Theil–Sen throughout, so one outlier
or a step does not pass for a trend."""
from __future__ import annotations

import math

import numpy as np

KNOWN_HIGH_MARGIN = 1.05
MIN_NOISE_DIFFS = 3
RECENT_RISING = 0.8  # an accelerating rise: at least this share of the recent first differences rise


def theil_sen(t: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Median of pairwise slopes and the median intercept; robust to a step or an outlier."""
    n = len(t)
    if n < 2:
        return 0.0, float(y[-1]) if n else 0.0
    i, j = np.triu_indices(n, 1)
    dt = t[j] - t[i]
    ok = dt > 0
    slope = float(np.median((y[j] - y[i])[ok] / dt[ok])) if ok.any() else 0.0
    intercept = float(np.median(y - slope * t))
    return slope, intercept


class RateForecast:
    """fit(t, rate) on the trend window; level, slope and noise; peak(horizon) = what to provision for.

    * slope: Theil-Sen over the window, kept only when the trend it implies over the window exceeds twice the
      noise (a trend smaller than the noise is no trend);
    * noise: the robust std of the window's first differences / √2 — insensitive to steps and trends; 0 until
      there are MIN_NOISE_DIFFS differences (with two, a job's start — a first scrape at 0, then the load — is
      half of them and passes for noise of half the load);
    * level: the median of the last three points (robust to one outlier, follows a step within a minute),
      or the last point when it is higher and `optimistic` is False (a scale-up must not miss a step);
    * span: the time the points cover; peak() extrapolates the slope no further;
    * an accelerating rise (`recent_s`, 0 = off): the window's Theil–Sen slope lags a rise that began late in it (a
      morning's climb after a flat night reads as a few records/s per minute), so the median first difference over
      the last `recent_s` replaces it when larger, when at least `RECENT_RISING` of those differences rise (a step is
      one difference, noise half of them) and when it too exceeds twice the noise over that time."""

    def __init__(self, recent_s: float = 0.0):
        self.recent_s = recent_s

    def fit(self, t, y, now: float) -> "RateForecast":
        t = np.asarray(t, dtype=float) - now
        y = np.asarray(y, dtype=float)
        self.n_ = len(y)
        self.slope_, self.noise_ = 0.0, 0.0
        self.span_ = float(t[-1] - t[0]) if self.n_ else 0.0
        if self.n_ > MIN_NOISE_DIFFS:
            d = np.diff(y)
            self.noise_ = float(1.4826 * np.median(np.abs(d - np.median(d))) / math.sqrt(2.0))
        if self.n_ >= 6:
            slope, _ = theil_sen(t, y)
            span = float(t[-1] - t[0])
            self.slope_ = slope if abs(slope) * span > 2.0 * self.noise_ else 0.0
            rise = self._recent_rise(t, y)
            if rise > max(self.slope_, 0.0):
                self.slope_ = rise
        self.recent_ = float(np.median(y[-3:])) if self.n_ else 0.0
        self.last_ = float(y[-1]) if self.n_ else 0.0
        return self

    def _recent_rise(self, t: np.ndarray, y: np.ndarray) -> float:
        """The median first difference's slope over the last `recent_s`, when most of them rise and it exceeds twice
        the noise over that time; else 0."""
        if self.recent_s <= 0:
            return 0.0
        last = t >= t[-1] - self.recent_s
        if last.sum() < 6:
            return 0.0
        tr, yr = t[last], y[last]
        d = np.diff(yr) / np.diff(tr)
        rise = float(np.median(d))
        if (d > 0).mean() < RECENT_RISING or rise * float(tr[-1] - tr[0]) <= 2.0 * self.noise_:
            return 0.0
        return rise

    def peak(self, horizon_s: float, z: float, optimistic: bool = False, known_high: float = 0.0) -> float:
        """Highest rate expected within the horizon: level + max(slope, 0) × horizon + z × noise. A trend is
        extrapolated no further than the span it was measured over: six scrapes of noise can pass for a slope,
        and 20 minutes of it would size a job for a load that never comes; nor past `known_high` (a level the
        source reached before) while the level is below it: a load that rises back mostly turns where it did."""
        level = self.recent_ if optimistic else max(self.recent_, self.last_)
        ahead = min(horizon_s, self.span_)
        rise = max(self.slope_, 0.0) * ahead
        if level < KNOWN_HIGH_MARGIN * known_high:  # near it: the noise may have taken the level past it
            rise = min(rise, max(known_high - level, 0.0))
        return max(level + rise, 0.0) + z * self.noise_

    def after_fall(self, horizon_s: float, z: float) -> float:
        """The rate when a trend down goes on for the horizon (no further than the span it was measured over, as
        peak()), with the noise band: what a scale-in then would plan for. The level when there is no trend down."""
        fall = min(self.slope_, 0.0) * min(horizon_s, self.span_)
        return max(self.recent_ + fall, 0.0) + z * self.noise_


def burst_ratios(t, y, half: int) -> list[tuple[float, float]]:
    """(time, ratio) of the scrapes that stood above their neighbourhood: the rate two consecutive scrapes
    sustained over the median of the `half` scrapes either side. Judged only once those neighbours are seen,
    so a step (whose neighbourhood median follows it) or a trend is not a burst, nor is one noisy scrape."""
    y = np.asarray(y, dtype=float)
    out = []
    for i in range(half, len(y) - half - 1):
        base = float(np.median(y[i - half:i + half + 1]))
        if base > 0:
            out.append((float(t[i]), float(min(y[i], y[i + 1])) / base))
    return out


def decayed_excess(t: float, ratio: float, now: float, memory_s: float) -> float:
    """A burst's excess over the level (ratio − 1), decaying exponentially with its age."""
    return (ratio - 1.0) * math.exp(-(now - t) / memory_s)


def burst_factor(bursts: list[list[float]], now: float, memory_s: float, nth: int = 1,
                 episode_gap_s: float = 600.0, cap: float = 0.0) -> float:
    """1 + the remembered excess of the `nth` largest burst episode (bursts at most `episode_gap_s` apart are one):
    with nth > 1 only bursts that recur are provisioned for; at most `cap` (0: no cap)."""
    episodes: list[float] = []
    last = None
    for t, r in sorted(bursts):
        excess = decayed_excess(t, r, now, memory_s)
        if last is None or t - last > episode_gap_s:
            episodes.append(excess)
        else:
            episodes[-1] = max(episodes[-1], excess)
        last = t
    episodes.sort(reverse=True)
    factor = 1.0 + (episodes[nth - 1] if len(episodes) >= nth else 0.0)
    return min(factor, cap) if cap > 0 else factor


def low_spells(t, high) -> tuple[list[float], float | None]:
    """(the lengths of the complete low spells, how long the current one has lasted) of a history of scrapes
    flagged high or not, each measured from the last high scrape before it: a spell cut by the history's start is
    not known, and the current one is None when no scrape was high or the last one is."""
    spells, last_high, low = [], None, False
    for ti, hi in zip(t, high):
        if hi:
            if low and last_high is not None:
                spells.append(float(ti) - last_high)
            last_high, low = float(ti), False
        else:
            low = True
    current = float(t[-1]) - last_high if low and last_high is not None else None
    return spells, current
