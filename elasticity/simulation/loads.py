"""Load generators (records/s over time) and the CSV trace reader.

Every generator is a pure function of time; noise is added separately (`noisy`) from a seeded generator, so
a scenario with a fixed seed is the same for every policy — and the oracle can know it in advance.
"""
from __future__ import annotations

import csv
import io
import math
import sys
from array import array
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np

from elasticity.errors import InputError, shorten

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
# pasted whole) into a clear error instead of a machine brought down. The file is read as a stream and refused
# as soon as it passes a bound, so a huge file (or an endless pipe) costs no more than the bound.
MAX_TRACE_BYTES = 32 * 1024 * 1024
MAX_TRACE_ROWS = 500_000
MAX_TRACE_SPAN_S = 7 * 86400.0
MAX_TRACE_RATE = 1e9
STDIN = "-"


class _ByteLimit(io.RawIOBase):
    """Passes bytes through and refuses the trace once more than MAX_TRACE_BYTES went by: the size bound holds
    for standard input as well as a file, and memory stays bounded even by a file with no line breaks."""

    def __init__(self, source, name: str) -> None:
        super().__init__()
        self.source, self.name, self.count = source, name, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.source.read(len(buffer))
        self.count += len(data)
        if self.count > MAX_TRACE_BYTES:
            raise InputError(f"{self.name}: the trace is more than {MAX_TRACE_BYTES / 2**20:g} MiB; at most "
                             f"{MAX_TRACE_BYTES / 2**20:g} MiB ({MAX_TRACE_ROWS} rows) is read: resample it coarser")
        buffer[:len(data)] = data
        return len(data)


@contextmanager
def _trace_text(path: str, name: str) -> Iterator[io.TextIOBase]:
    """The trace as text lines (utf-8, with or without a byte-order mark), from a file or, for "-", stdin."""
    if path == STDIN:
        source, owned = sys.stdin.buffer, False
    else:
        file = Path(path)
        if not file.exists():
            raise InputError(f"{name}: no such trace file")
        if file.is_file() and file.stat().st_size > MAX_TRACE_BYTES:  # refused without reading a byte
            raise InputError(f"{name}: the trace is {file.stat().st_size / 2**20:.0f} MiB; at most "
                             f"{MAX_TRACE_BYTES / 2**20:g} MiB ({MAX_TRACE_ROWS} rows) is read: resample it coarser")
        try:
            source, owned = open(file, "rb"), True
        except OSError as err:
            raise InputError(f"{name}: cannot read the trace: {err}") from None
    text = io.TextIOWrapper(io.BufferedReader(_ByteLimit(source, name)), encoding="utf-8-sig")
    try:
        yield text
    finally:
        text.close()  # closes the wrappers only: stdin stays open
        if owned:
            source.close()


def _content_lines(text: Iterable[str]) -> Iterator[tuple[int, str]]:
    """(line number, line) of each line that is neither blank nor a '#' comment."""
    for no, line in enumerate(text, 1):
        if line.strip() and not line.lstrip().startswith("#"):
            yield no, line


def _cells(line: str) -> list[str]:
    # csv only matters for quoted cells; a plain split is several times faster on the usual unquoted row
    cells = next(csv.reader([line])) if '"' in line else line.split(",")
    return [c.strip() for c in cells]


def _header(lines: Iterator[tuple[int, str]], name: str) -> tuple[int, int, list[str]]:
    """The positions of the time and rate columns, and all column names."""
    first = next(lines, None)
    if first is None:
        raise InputError(f"{name}: the trace is empty (expected a header 'time,rate' and at least two rows)")
    no, head = first
    cols = [c.lower() for c in _cells(head)]
    if "time" not in cols or "rate" not in cols:
        raise InputError(f"{name}:{no}: expected a header with columns 'time,rate', got {head.strip()!r}")
    twice = sorted({c for c in cols if cols.count(c) > 1} & {"time", "rate"})
    if twice:
        raise InputError(f"{name}:{no}: the header names column {twice[0]!r} twice; which one to read is unclear")
    return cols.index("time"), cols.index("rate"), cols


def _row(no: int, line: str, cols: list[str], it: int, ir: int, name: str, first: float | None,
         previous: tuple[float, str] | None) -> tuple[float, float, str]:
    """One row's (time, rate, time as written), checked; `first` is the first row's time, `previous` the previous
    row's (time, time as written)."""
    cells = _cells(line)
    if len(cells) != len(cols):
        raise InputError(f"{name}:{no}: expected {len(cols)} columns ({','.join(cols)}), got {len(cells)}: "
                         f"{line.strip()!r}")
    try:
        t = _parse_time(cells[it])
    except ValueError:
        raise InputError(f"{name}:{no}: time {cells[it]!r} is not a number of seconds or an ISO-8601 time") from None
    try:
        r = float(cells[ir])
    except ValueError:
        raise InputError(f"{name}:{no}: rate {cells[ir]!r} is not a number") from None
    if not (math.isfinite(t) and math.isfinite(r)):
        raise InputError(f"{name}:{no}: time and rate must be finite numbers")
    if r < 0:
        raise InputError(f"{name}:{no}: rate {cells[ir]} is negative")
    if r > MAX_TRACE_RATE:
        raise InputError(f"{name}:{no}: rate {shorten(cells[ir], 20)} is above {MAX_TRACE_RATE:.0e} records/s")
    if previous is not None and t <= previous[0]:
        raise InputError(f"{name}:{no}: time {shorten(cells[it])} does not increase "
                         f"(previous row: {shorten(previous[1])})")
    if first is not None and t - first > MAX_TRACE_SPAN_S:
        raise InputError(f"{name}:{no}: the trace spans more than {MAX_TRACE_SPAN_S / 86400:.0f} days "
                         f"({t - first:.3g} s from its first row); times are in seconds (or ISO-8601)")
    return t, r, cells[it]


def _rows(lines: Iterator[tuple[int, str]], name: str) -> tuple[array, array]:
    """Times and rates of every row after the header, stopping at the first row past a bound."""
    it, ir, cols = _header(lines, name)
    times, rates = array("d"), array("d")
    previous = None
    for no, line in lines:
        if len(times) == MAX_TRACE_ROWS:
            raise InputError(f"{name}: the trace has more than {MAX_TRACE_ROWS} rows; at most {MAX_TRACE_ROWS} "
                             "are read: resample it coarser")
        t, r, written = _row(no, line, cols, it, ir, name, times[0] if times else None, previous)
        previous = (t, written)
        times.append(t)
        rates.append(r)
    return times, rates


def read_trace(path: str | Path) -> Trace:
    """Read a `time,rate` CSV from a file, or from standard input for "-": a header naming the two columns (any
    order, any case), then one row per point; time in seconds (any origin) or ISO-8601; rate in records/s,
    ≥ 0; times strictly increasing. Blank lines and lines starting with '#' are skipped. The text is parsed as
    it is read, and refused at the first byte, row or second past a bound (MAX_TRACE_*). Errors name the file
    and line."""
    path = str(path)
    name = "<stdin>" if path == STDIN else str(Path(path))
    with _trace_text(path, name) as text:
        try:
            times, rates = _rows(_content_lines(text), name)
        except (OSError, UnicodeDecodeError) as err:
            raise InputError(f"{name}: cannot read the trace: {err}") from None
    if len(times) < 2:
        raise InputError(f"{name}: the trace needs at least two rows after the header, got {len(times)}")
    ts = np.frombuffer(times, dtype=float) - times[0]
    return Trace(ts, np.frombuffer(rates, dtype=float), name)
