"""A load that repeats (a day, a compressed week's days, regular teeth): its period, read from a long history of
per-bucket mean rates by autocorrelation, and what it did one period ago just ahead of now (`SeasonalForecast`).
Plain numbers in and out."""
from __future__ import annotations

import numpy as np

TROUGH_DEPTH = 0.3  # the autocorrelation must dip at least this far below a peak before it: a trend's does not
NEAR_BEST = 0.9  # of the peaks as strong as this × the strongest, the shortest lag is the period (not its multiples)
LEVEL_BUCKETS = 5  # the level now against the level one period ago: medians over this many buckets


class SeasonalForecast:
    """fit(t, rate) on evenly spaced bucket means (t: bucket starts, s); period_ is the lag of the strongest
    autocorrelation peak of the linearly detrended series (None when no peak reaches `min_corr`, when less than
    `min_periods` periods were seen, or when the peak is no peak — a trend's autocorrelation only decays);
    peak(ahead) = the highest bucket one period before the next `ahead` seconds, scaled by the level now over the
    level then (a weekend day is lower than a weekday, a growing load higher)."""

    def __init__(self, min_period_s: float = 1200.0, min_corr: float = 0.6, min_periods: float = 2.0,
                 max_ratio: float = 2.0):
        self.min_period_s = min_period_s
        self.min_corr = min_corr
        self.min_periods = min_periods
        self.max_ratio = max_ratio

    def fit(self, t, y) -> "SeasonalForecast":
        t = np.asarray(t, dtype=float)
        self.y_ = np.asarray(y, dtype=float)
        self.period_, self.corr_ = None, 0.0
        n = len(self.y_)
        if n < 8:
            return self
        self.step_ = float(t[1] - t[0])
        lag_min = max(2, int(np.ceil(self.min_period_s / self.step_)))
        lag_max = int(n / self.min_periods)
        if lag_max <= lag_min + 1:
            return self
        acf = _autocorrelation(self.y_, lag_max + 2)
        if acf is None:
            return self
        peaks = [k for k in range(lag_min, lag_max + 1)
                 if acf[k] >= self.min_corr and acf[k] >= acf[k - 1] and acf[k] >= acf[k + 1]
                 and acf[k] - float(acf[1:k].min()) >= TROUGH_DEPTH]
        if not peaks:
            return self
        best = max(acf[k] for k in peaks)
        lag = min(k for k in peaks if acf[k] >= NEAR_BEST * best)
        self.period_, self.corr_ = lag * self.step_, float(acf[lag])
        return self

    def peak(self, ahead_s: float) -> float | None:
        """The highest bucket one period before the next `ahead_s` (the buckets after the last one fitted), × the level
        of the last LEVEL_BUCKETS buckets over the level of the same buckets one period before (clamped to
        [1 / max_ratio, max_ratio]); None without a period."""
        if self.period_ is None:
            return None
        n, lag = len(self.y_), int(round(self.period_ / self.step_))
        ahead = max(1, int(np.ceil(ahead_s / self.step_)))
        if n - lag < LEVEL_BUCKETS:
            return None
        then = self.y_[n - lag:n - lag + ahead]
        level_then = float(np.median(self.y_[n - lag - LEVEL_BUCKETS:n - lag]))
        level_now = float(np.median(self.y_[n - LEVEL_BUCKETS:]))
        ratio = level_now / level_then if level_then > 0 else 1.0
        ratio = min(max(ratio, 1.0 / self.max_ratio), self.max_ratio)
        return float(then.max()) * ratio


def _autocorrelation(y: np.ndarray, lags: int) -> np.ndarray | None:
    """The autocorrelation of y, linearly detrended, for lags 0..lags-1 (each lag over its own overlap), or None for
    a flat series."""
    n = len(y)
    x = np.arange(n, dtype=float)
    resid = y - np.polyval(np.polyfit(x, y, 1), x)
    var = float(resid.var())
    if var <= 1e-12 or lags >= n:
        return None
    f = np.fft.rfft(resid, 2 * n)
    acov = np.fft.irfft(f * np.conj(f), 2 * n)[:lags] / (n - np.arange(lags))
    return acov / var


def bucket_means(buckets: list[list[float]], step_s: float, max_gap: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """(bucket start times, mean rates) from [[start, sum, count], ...] kept in order, evenly spaced: gaps of up to
    `max_gap` buckets filled by linear interpolation; before a longer gap (metrics lost, a restart) the history is
    dropped — a line drawn across it would be read as load."""
    starts = [b[0] for b in buckets]
    cut = next((i for i in range(len(starts) - 1, 0, -1) if starts[i] - starts[i - 1] > (max_gap + 1) * step_s), 0)
    buckets = buckets[cut:]
    if not buckets:
        return np.array([]), np.array([])
    t = np.array([b[0] for b in buckets], dtype=float)
    means = np.array([b[1] / max(b[2], 1) for b in buckets], dtype=float)
    grid = np.arange(t[0], t[-1] + step_s / 2, step_s)
    return grid, np.interp(grid, t, means)
