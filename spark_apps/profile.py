"""Rate profiles of the load generator: how many records have been offered by time t, and when record i was offered.

Every profile is reduced to piecewise-constant rate segments over one cycle (constant, step, sinusoid) or over the
whole trace, so offered(t) = F(t) is exact and invertible: record `seq` is offered at F^-1(seq + 1). The generator,
the runner (backlog) and the checker (expected sink contents) all call these same functions, so they agree to the
microsecond.
"""
from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np

PROFILES = ("constant", "step", "sinusoid", "trace")
SINUSOID_SLICES = 200  # slices per period; each slice offers the exact integral of the sine over it
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(us|ms|s|m|h)")
_UNIT = {"us": 1e-6, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str | float | int) -> float:
    """Seconds from "90", "1.5s", "500ms", "2m", "1h30m" (the StreamApp `period` format)."""
    if isinstance(text, (int, float)):
        return float(text)
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a duration: {text!r} (use e.g. 30s, 500ms, 2m, 1h30m)")
    return sum(float(n) * _UNIT[u] for n, u in parts)


def read_trace(path: str) -> list[tuple[float, float]]:
    """(time s, rate records/s) rows of a CSV with header `time,rate`, sorted by time."""
    with open(path, newline="") as f:
        rows = [(float(r["time"]), float(r["rate"])) for r in csv.DictReader(f)]
    if not rows:
        raise ValueError(f"trace {path} has no rows (header must be time,rate)")
    if any(rate < 0 or t < 0 for t, rate in rows):
        raise ValueError(f"trace {path}: times and rates must be >= 0")
    return sorted(rows)


@dataclass(frozen=True)
class RateProfile:
    """Offered load as a function of time since the generator's start.

    `starts`/`rates` are segments over [0, cycle) when `cycle` is set (then they repeat), otherwise the last
    rate holds forever. After `duration` seconds (if set) nothing more is offered.
    """

    starts: np.ndarray
    rates: np.ndarray
    cycle: float | None
    duration: float | None = None

    @cached_property
    def _cum(self) -> np.ndarray:  # records offered at each segment start (and at the end of the last one)
        widths = np.diff(np.append(self.starts, self.cycle if self.cycle else self.starts[-1]))
        return np.concatenate(([0.0], np.cumsum(self.rates * widths)))

    def _per_cycle(self) -> float:
        return float(self._cum[-1])

    def offered(self, t: float | np.ndarray) -> np.ndarray:
        """Records offered by t seconds after start (a float; floor it to count whole records)."""
        t = np.minimum(np.maximum(np.asarray(t, dtype=float), 0.0), self.duration if self.duration else np.inf)
        cum = self._cum
        cycles = np.zeros_like(t)
        if self.cycle:
            cycles = np.floor(t / self.cycle)
            t = t - cycles * self.cycle
        k = np.searchsorted(self.starts, t, side="right") - 1
        return cycles * self._per_cycle() + cum[k] + self.rates[k] * (t - self.starts[k])

    def total(self) -> int | None:
        """Records offered over the whole run, or None when the run is unbounded."""
        return None if self.duration is None else int(math.floor(float(self.offered(self.duration)) + 1e-9))

    def offered_count(self, t: float) -> int:
        """Whole records offered by t (seq numbers 0 .. n-1 exist)."""
        n = int(math.floor(float(self.offered(t)) + 1e-9))
        total = self.total()
        return n if total is None else min(n, total)

    def offer_time(self, seq: np.ndarray) -> np.ndarray:
        """Seconds after start at which record `seq` (0-based) is offered: F^-1(seq + 1)."""
        x = np.asarray(seq, dtype=float) + 1.0
        cum = self._cum
        cycles = np.zeros_like(x)
        if self.cycle:
            per = self._per_cycle()
            cycles = np.ceil(x / per) - 1.0
            x = x - cycles * per
        k = np.searchsorted(cum[1:], x, side="left")
        if not self.cycle:  # past the last trace row the last rate holds
            k = np.minimum(k, len(self.rates) - 1)
        return cycles * (self.cycle or 0.0) + self.starts[k] + (x - cum[k]) / self.rates[k]

    def rate_at(self, t: float) -> float:
        """Offered rate (records/s) at t seconds after start."""
        if t < 0 or (self.duration is not None and t >= self.duration):
            return 0.0
        if self.cycle:
            t = t % self.cycle
        return float(self.rates[np.searchsorted(self.starts, t, side="right") - 1])


def make_profile(profile: str = "constant", rate: float = 1000.0, peak_rate: float | None = None,
                 period: str | float | None = None, trace: str | None = None,
                 duration: str | float | None = None) -> RateProfile:
    """Build a profile from the StreamApp `spark.source.generator` fields.

    constant: `rate` throughout. step: `rate` for `period`, then `peak_rate` for `period`, repeating (a single step
    when the run is shorter than two periods). sinusoid: between `rate` and `peak_rate`, starting at the middle and
    rising, one cycle per `period`. trace: CSV `time,rate`, each rate holding until the next row (0 before the
    first row, the last rate afterwards). `duration`: stop offering after that long (None: never).
    """
    if rate <= 0:
        raise ValueError("rate must be > 0")
    peak = float(peak_rate) if peak_rate is not None else 2.0 * rate
    per = parse_duration(period) if period is not None else 60.0
    dur = parse_duration(duration) if duration is not None else None
    if per <= 0 or (dur is not None and dur <= 0):
        raise ValueError("period and duration must be > 0")
    if profile == "constant":
        return RateProfile(np.array([0.0]), np.array([float(rate)]), cycle=1.0, duration=dur)
    if profile == "step":
        return RateProfile(np.array([0.0, per]), np.array([float(rate), peak]), cycle=2 * per, duration=dur)
    if profile == "sinusoid":
        mid, amp = (rate + peak) / 2.0, (peak - rate) / 2.0
        edges = np.linspace(0.0, per, SINUSOID_SLICES + 1)
        integral = mid * edges + amp * per / (2 * math.pi) * (1 - np.cos(2 * math.pi * edges / per))
        return RateProfile(edges[:-1], np.diff(integral) / np.diff(edges), cycle=per, duration=dur)
    if profile == "trace":
        if not trace:
            raise ValueError("profile trace needs a CSV file (time,rate)")
        rows = read_trace(trace)
        if rows[0][0] > 0:
            rows.insert(0, (0.0, 0.0))
        if rows[-1][1] <= 0 and dur is None:
            dur = rows[-1][0]  # a trace ending at rate 0 ends the run
        if not any(r > 0 for _, r in rows):
            raise ValueError(f"trace {trace} never offers anything")
        return RateProfile(np.array([t for t, _ in rows]), np.array([r for _, r in rows]), cycle=None, duration=dur)
    raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
