"""Load generators (records/s over time) and the CSV trace reader.

Every generator is a pure function of time; noise is added separately (`noisy`) from a seeded generator, so
a scenario with a fixed seed is the same for every policy — and the oracle can know it in advance.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Callable

import numpy as np

from elasticity.errors import InputError

Load = Callable[[np.ndarray], np.ndarray]


def constant(rate: float) -> Load:
    return lambda t: np.full_like(np.asarray(t, dtype=float), float(rate))


def step(base: float, high: float, up_at_s: float, down_at_s: float | None = None) -> Load:
    """`base` records/s, `high` from up_at_s (until down_at_s, if given)."""
    def f(t):
        t = np.asarray(t, dtype=float)
        on = t >= up_at_s
        if down_at_s is not None:
            on &= t < down_at_s
        return np.where(on, float(high), float(base))
    return f


def sinusoid(mean: float, amplitude: float, period_s: float, phase: float = 0.0) -> Load:
    return lambda t: mean + amplitude * np.sin(2 * np.pi * np.asarray(t, dtype=float) / period_s + phase)


def ramp(points: list[tuple[float, float]]) -> Load:
    """Piecewise linear through (time, rate) points; flat outside."""
    ts = np.array([p[0] for p in points], dtype=float)
    rs = np.array([p[1] for p in points], dtype=float)
    return lambda t: np.interp(np.asarray(t, dtype=float), ts, rs)


def diurnal(mean: float, amplitude: float, day_s: float, bursts_per_hour: float = 2.0,
            burst_factor: float = 1.6, burst_s: tuple[float, float] = (60.0, 240.0), seed: int = 0,
            duration_s: float | None = None) -> Load:
    """A day compressed into day_s: a low night and a two-humped day (0.6·sin + 0.4·sin 2ω), with bursts —
    Poisson arrivals (bursts_per_hour), each multiplying the rate by burst_factor for U[burst_s] seconds."""
    rng = np.random.default_rng(seed)
    horizon = duration_s or day_s
    n = rng.poisson(bursts_per_hour * horizon / 3600.0)
    starts = np.sort(rng.uniform(0, horizon, n))
    lengths = rng.uniform(*burst_s, n)

    def f(t):
        t = np.asarray(t, dtype=float)
        w = 2 * np.pi * t / day_s
        shape = 0.6 * np.sin(w - np.pi / 2) + 0.4 * np.sin(2 * w - np.pi / 2)  # −1 at midnight
        base = mean + amplitude * shape / 1.0
        return np.maximum(base, 0.0) * windows(t, starts, lengths, burst_factor)
    return f


def windows(t: np.ndarray, starts, lengths, factors) -> np.ndarray:
    """A multiplier over t: factors[i] (or one factor for all) within [starts[i], starts[i] + lengths[i]), 1
    elsewhere; where windows overlap, the later one counts."""
    t = np.asarray(t, dtype=float)
    factors = np.broadcast_to(np.asarray(factors, dtype=float), np.shape(starts))
    mult = np.ones_like(t)
    for s0, ln, k in zip(starts, lengths, factors):
        mult = np.where((t >= s0) & (t < s0 + ln), k, mult)
    return mult


def noisy(rates: np.ndarray, sd: float, seed: int, corr: float = 0.7) -> np.ndarray:
    """Multiplicative AR(1) noise with stationary std `sd` and lag-1 correlation `corr`; never negative."""
    if sd <= 0:
        return np.asarray(rates, dtype=float).copy()
    rng = np.random.default_rng(seed)
    e = rng.standard_normal(len(rates))
    x = np.empty(len(rates))
    k = math.sqrt(1 - corr * corr)
    prev = e[0]
    x[0] = prev
    for i in range(1, len(rates)):
        prev = corr * prev + k * e[i]
        x[i] = prev
    return np.maximum(np.asarray(rates, dtype=float) * (1.0 + sd * x), 0.0)


@dataclass
class Trace:
    """A load from a CSV file: times (s, from 0) and rates; linear interpolation in between."""

    times: np.ndarray
    rates: np.ndarray
    path: str = ""

    @property
    def duration_s(self) -> float:
        return float(self.times[-1])

    def __call__(self, t) -> np.ndarray:
        return np.interp(np.asarray(t, dtype=float), self.times, self.rates)


def _parse_time(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        pass
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return dt.timestamp()


# A trace is simulated at one step per second or finer, and the oracle plans over every step: these bounds keep a
# run within minutes and a few hundred MB, and turn a mistaken file (epoch milliseconds read as seconds, a log
# pasted whole) into a clear error instead of a machine brought down.
MAX_TRACE_BYTES = 32 * 1024 * 1024
MAX_TRACE_ROWS = 500_000
MAX_TRACE_SPAN_S = 7 * 86400.0
MAX_TRACE_RATE = 1e9


def read_trace(path: str | Path) -> Trace:
    """Read a `time,rate` CSV: a header naming the two columns (any order, any case), then one row per
    point; time in seconds (any origin) or ISO-8601; rate in records/s, ≥ 0; times strictly increasing.
    Blank lines and lines starting with '#' are skipped. Errors name the file and line."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such trace file")
    if path.is_file() and path.stat().st_size > MAX_TRACE_BYTES:
        raise InputError(f"{path}: the trace is {path.stat().st_size / 2**20:.0f} MiB; at most "
                         f"{MAX_TRACE_BYTES // 2**20} MiB ({MAX_TRACE_ROWS} rows) is read: resample it coarser")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"{path}: cannot read the trace: {err}") from None
    rows = [(i + 1, line) for i, line in enumerate(text.splitlines()) if line.strip() and not line.lstrip().startswith("#")]
    if len(rows) > MAX_TRACE_ROWS + 1:
        raise InputError(f"{path}: the trace has {len(rows) - 1} rows; at most {MAX_TRACE_ROWS}: resample it coarser")
    if not rows:
        raise InputError(f"{path}: the trace is empty (expected a header 'time,rate' and at least two rows)")
    head_no, head = rows[0]
    cols = [c.strip().lower() for c in next(csv.reader([head]))]
    if "time" not in cols or "rate" not in cols:
        raise InputError(f"{path}:{head_no}: expected a header with columns 'time,rate', got {head.strip()!r}")
    it, ir = cols.index("time"), cols.index("rate")
    times, rates = [], []
    for no, line in rows[1:]:
        cells = [c.strip() for c in next(csv.reader([line]))]
        if len(cells) != len(cols):
            raise InputError(f"{path}:{no}: expected {len(cols)} columns ({','.join(cols)}), got {len(cells)}: "
                             f"{line.strip()!r}")
        try:
            t = _parse_time(cells[it])
        except ValueError:
            raise InputError(f"{path}:{no}: time {cells[it]!r} is not a number of seconds or an ISO-8601 time") from None
        try:
            r = float(cells[ir])
        except ValueError:
            raise InputError(f"{path}:{no}: rate {cells[ir]!r} is not a number") from None
        if not (math.isfinite(t) and math.isfinite(r)):
            raise InputError(f"{path}:{no}: time and rate must be finite numbers")
        if r < 0:
            raise InputError(f"{path}:{no}: rate {cells[ir]} is negative")
        if r > MAX_TRACE_RATE:
            raise InputError(f"{path}:{no}: rate {cells[ir][:20]} is above {MAX_TRACE_RATE:.0e} records/s")
        if times and t <= times[-1]:
            raise InputError(f"{path}:{no}: time {cells[it]} does not increase (previous row: {times[-1] + 0:g})")
        if times and t - times[0] > MAX_TRACE_SPAN_S:
            raise InputError(f"{path}:{no}: the trace spans more than {MAX_TRACE_SPAN_S / 86400:.0f} days "
                             f"({t - times[0]:.3g} s from its first row); times are in seconds (or ISO-8601)")
        times.append(t)
        rates.append(r)
    if len(times) < 2:
        raise InputError(f"{path}: the trace needs at least two rows after the header, got {len(times)}")
    ts = np.array(times) - times[0]
    return Trace(ts, np.array(rates), str(path))
