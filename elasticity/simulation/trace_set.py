"""An independent set of CSV load traces: the broad suite's eight shapes, drawn by other generators than its
families (families.py) and written as a user's traces would be — rows every 5 to 60 s, read back by linear
interpolation, with noise of another kind (AR(1) per row, so it outlives a 30-s scrape where it is correlated) and
at other magnitudes (the `b` variant's crowds outgrow the default 64 instances of a stage).

No default is chosen on it: it checks how far the suite's verdicts hold on loads made apart from the families
(`elastream bench elasticity --traces DIR`). Each file is SHAPE-VARIANT.csv; the shape is the family it judges.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

H = 3600.0
# variant: (row interval s, noise sd, AR(1) coefficient per row, base records/s)
VARIANTS = {"a": (10.0, 0.02, 0.9, 500.0), "b": (60.0, 0.05, 0.9, 2500.0), "c": (5.0, 0.10, 0.9, 1500.0)}


def _flash_crowd(r, t_end, t):
    at, length, k = r.uniform(1, 3) * H, r.uniform(3, 40) * 60, r.uniform(3, 6)
    up = np.clip((t - at) / 90, 0, 1) * np.clip((at + length - t) / 90 + 1, 0, 1)  # 90-s ramps
    return 1 + (k - 1) * up


def _sawtooth(r, t_end, t):
    tooth, k = r.uniform(15, 60) * 60, r.uniform(1.8, 3)
    return 1 + (k - 1) * np.mod(t, tooth) / tooth


def _week(r, t_end, t):
    day = t_end / 7  # one broad peak a weekday, flatter weekends
    peak = np.where(np.floor(t / day) % 7 >= 5, 1.3, r.uniform(2, 3))
    return 1 + (peak - 1) * np.sin(np.pi * np.mod(t, day) / day) ** 2


def _web_day(r, t_end, t):
    hour = 24 * t / t_end
    shape = 1 + 1.5 * np.exp(-((hour - 9) / 2) ** 2) + 1.2 * np.exp(-((hour - 19) / 2.5) ** 2)
    for _ in range(r.poisson(2 * t_end / H)):  # lognormal bursts of 20 s to 4 min
        at, length = r.uniform(0, t_end), r.uniform(20, 240)
        shape = shape * np.where((t >= at) & (t < at + length), 1 + r.lognormal(-1.2, 0.8), 1.0)
    return shape


def _slow_growth(r, t_end, t):
    return r.uniform(1.5, 4) ** (t / t_end)


def _on_off(r, t_end, t):
    k, level, at, on = r.uniform(2, 5), np.ones_like(t), 0.0, False
    mean_s = r.uniform(5, 20) * 60
    while at < t_end:
        length = r.exponential(mean_s)
        if on:
            level[(t >= at) & (t < at + length)] = k
        at, on = at + length, not on
    return level


def _rare_spikes(r, t_end, t):
    level = np.ones_like(t)
    for _ in range(r.integers(3, 7)):
        at, length = r.uniform(0.3 * H, t_end), r.uniform(20, 180)
        level[(t >= at) & (t < at + length)] = r.uniform(2, 5)
    return level


def _step_down_up(r, t_end, t):
    level = np.ones_like(t)
    for half in range(1 + int(r.integers(0, 2))):  # one dip or two
        at = r.uniform(0.5 * H, 0.4 * t_end) + half * t_end / 2
        level[(t >= at) & (t < at + r.uniform(20, 120) * 60)] = r.uniform(0.2, 0.7)
    return level


# shape: (its generator, its duration range in hours)
SHAPES: dict[str, tuple[Callable, tuple[float, float]]] = {
    "flash-crowd": (_flash_crowd, (6, 10)), "sawtooth": (_sawtooth, (4, 8)), "week": (_week, (7, 21)),
    "web-day": (_web_day, (8, 24)), "slow-growth": (_slow_growth, (4, 10)), "on-off": (_on_off, (4, 8)),
    "rare-spikes": (_rare_spikes, (5, 10)), "step-down-up": (_step_down_up, (4, 8)),
}


def _noise(r, n: int, sd: float, ar: float) -> np.ndarray:
    """Multiplicative log-AR(1) noise with stationary standard deviation sd."""
    e = np.empty(n)
    e[0] = 0.0
    shocks = r.normal(0.0, sd * np.sqrt(1 - ar * ar), n)
    for i in range(1, n):
        e[i] = ar * e[i - 1] + shocks[i]
    return np.exp(e)


def trace(shape: str, variant: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(times in s, rates in records/s) of one trace; the same arguments give the same trace."""
    make, (h0, h1) = SHAPES[shape]
    step, sd, ar, base = VARIANTS[variant]
    r = np.random.default_rng([seed, list(SHAPES).index(shape), list(VARIANTS).index(variant)])
    t_end = r.uniform(h0, h1) * H
    t = np.arange(0.0, t_end, step if shape != "rare-spikes" else min(step, 5.0))  # a spike spans a few rows
    return t, np.maximum(0.0, base * make(r, t_end, t) * _noise(r, len(t), sd, ar))


def write_trace_set(directory: str | Path, seed: int = 0) -> list[Path]:
    """Writes every shape × variant as DIRECTORY/SHAPE-VARIANT.csv (header time,rate); returns the paths."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for shape in SHAPES:
        for variant in VARIANTS:
            t, rate = trace(shape, variant, seed)
            path = out / f"{shape}-{variant}.csv"
            path.write_text("time,rate\n" + "".join(f"{a:.0f},{b:.1f}\n" for a, b in zip(t, rate)))
            paths.append(path)
    return paths
