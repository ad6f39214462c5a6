"""Load profiles for placement: measured series cleaned up, and folded onto their period when the load repeats.

A profile is an (n, T) array: the load of n executors (in cores) at T evenly spaced steps. Folding takes, for each
phase of the period, the highest load any cycle had there, so a plan that fits the folded profile fits every cycle
seen (seed 001 places loads of the form a + b·sin(2πt/c + d): complementary peaks share a node).
"""
from __future__ import annotations

import numpy as np

MIN_CYCLES = 2  # a period is believed only when the window holds at least this many cycles of it
MIN_CORRELATION = 0.5  # ... and the load correlates with itself shifted by one period at least this much


def clean(loads: np.ndarray) -> np.ndarray:
    """Gaps (NaN: a scrape missed, an executor not yet started) become the series' own mean; no negative load."""
    x = np.array(loads, dtype=float, copy=True)
    if x.ndim == 1:
        x = x[None, :]
    means = np.nanmean(np.where(np.isnan(x).all(axis=1, keepdims=True), 0.0, x), axis=1)
    rows, cols = np.where(np.isnan(x))
    x[rows, cols] = means[rows]
    return np.maximum(x, 0.0)


def detect_period(loads: np.ndarray, min_period: int = 4) -> int | None:
    """The common period (in steps) of one or more load series, from their autocorrelations averaged with their
    variances as weights (complementary loads cancel in a total, not here): the lag of the highest peak after the
    first dip, if the window holds MIN_CYCLES of it and the correlation there is at least MIN_CORRELATION."""
    x = np.atleast_2d(np.asarray(loads, dtype=float))
    x = x - x.mean(axis=1, keepdims=True)
    T = x.shape[1]
    weight = (x * x).sum(axis=1)
    if T < MIN_CYCLES * min_period or not weight.any():
        return None
    lags = np.arange(min_period, T // MIN_CYCLES + 1)
    if lags.size == 0:
        return None
    corr = np.array([_correlation(x[:, :-k], x[:, k:], weight) for k in lags])
    dipped = np.maximum.accumulate(corr < 0)  # the first peak that matters comes after the correlation dips
    if not dipped.any():
        return None
    candidates = np.where(dipped, corr, -np.inf)
    top = candidates.max()
    if top < MIN_CORRELATION:
        return None
    # the shortest lag near the top: multiples of the period correlate as well as the period itself
    near = np.flatnonzero(candidates >= 0.9 * top)
    first = near[0]
    while first + 1 < candidates.size and candidates[first + 1] > candidates[first]:
        first += 1  # climb to the local peak
    return int(lags[first])


def _correlation(a: np.ndarray, b: np.ndarray, weight: np.ndarray) -> float:
    """Variance-weighted mean over series of the correlation of a[i] with b[i]."""
    norm = np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    r = np.divide((a * b).sum(axis=1), norm, out=np.zeros_like(norm), where=norm > 0)
    return float((r * weight).sum() / weight.sum())


def fold(loads: np.ndarray, period: int) -> np.ndarray:
    """(n, T) -> (n, period): per phase, the highest load of any cycle (the last, partial cycle included)."""
    x = np.asarray(loads, dtype=float)
    n, T = x.shape
    cycles = -(-T // period)
    padded = np.full((n, cycles * period), -np.inf)
    padded[:, :T] = x
    return padded.reshape(n, cycles, period).max(axis=1)


def profile(loads: np.ndarray, period: int | None = None) -> tuple[np.ndarray, int | None]:
    """Clean the measured loads, find their common period unless given, fold onto it.
    Returns (profile, period or None when the load does not repeat within the window)."""
    x = clean(loads)
    if period is None:
        period = detect_period(x)
    return (fold(x, period), period) if period else (x, None)
