"""A configuration space: typed knobs with ranges and defaults. Optimisers work in the unit cube [0, 1]^d (log
scale where a knob says so); `config()` turns a point into values and `point()` a configuration back into one."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np

from elasticity.errors import InputError


@dataclass(frozen=True)
class Int:
    name: str
    low: int
    high: int
    default: int
    log: bool = False

    def value(self, u: float) -> int:
        return int(round(_scale(u, self.low, self.high, self.log)))

    def unit(self, v: Any) -> float:
        return _unscale(float(v), self.low, self.high, self.log)

    def check(self, v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, int) or not self.low <= v <= self.high:
            return f"an integer in [{self.low}, {self.high}]"
        return None


@dataclass(frozen=True)
class Float:
    name: str
    low: float
    high: float
    default: float
    log: bool = False

    def value(self, u: float) -> float:
        return float(_scale(u, self.low, self.high, self.log))

    def unit(self, v: Any) -> float:
        return _unscale(float(v), self.low, self.high, self.log)

    def check(self, v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not self.low <= v <= self.high:
            return f"a number in [{self.low:g}, {self.high:g}]"
        return None


@dataclass(frozen=True)
class Choice:
    name: str
    values: tuple
    default: Any

    def value(self, u: float) -> Any:
        return self.values[min(int(u * len(self.values)), len(self.values) - 1)]

    def unit(self, v: Any) -> float:
        return (self.values.index(v) + 0.5) / len(self.values)

    def check(self, v: Any) -> str | None:
        return None if v in self.values else f"one of {', '.join(map(str, self.values))}"


Knob = Int | Float | Choice
FEW_VALUES = 16  # an integer knob with at most this many values is searched value by value, as a choice is


def _with(u: np.ndarray, changes: dict[int, float]) -> np.ndarray:
    v = u.copy()
    for i, x in changes.items():
        v[i] = x
    return v


def _singles_and_pairs(u: np.ndarray, moves: dict[int, list[float]], paired: list[int],
                       pair_moves: int | None = None) -> list[np.ndarray]:
    """u with each knob in `moves` set to each of its moves, and with every two knobs of `paired` set together
    (to each of their first `pair_moves` moves; all when None)."""
    out = [_with(u, {i: m}) for i, ms in moves.items() for m in ms]
    for n, a in enumerate(paired):
        for b in paired[n + 1:]:
            out += [_with(u, {a: ma, b: mb}) for ma in moves[a][:pair_moves] for mb in moves[b][:pair_moves]]
    return out


def _stack(u: np.ndarray, points: list[np.ndarray]) -> np.ndarray:
    return np.array(points) if points else np.empty((0, len(u)))


def _scale(u: float, low: float, high: float, log: bool) -> float:
    u = min(max(float(u), 0.0), 1.0)
    if u in (0.0, 1.0):
        return low if u == 0.0 else high
    v = math.exp(math.log(low) + u * (math.log(high) - math.log(low))) if log else low + u * (high - low)
    return min(max(v, low), high)  # exp(log(x)) may miss x in its last digit


def _unscale(v: float, low: float, high: float, log: bool) -> float:
    if high == low:
        return 0.5
    if log:
        return (math.log(v) - math.log(low)) / (math.log(high) - math.log(low))
    return (v - low) / (high - low)


class ConfigSpace:
    """`ConfigSpace([Int(...), Float(...), Choice(...)])`: sample, encode, decode and check configurations."""

    def __init__(self, knobs: Sequence[Knob]):
        names = [k.name for k in knobs]
        if len(set(names)) != len(names):
            raise InputError(f"knob names repeat: {names}")
        self.knobs = list(knobs)
        for k in self.knobs:
            if isinstance(k, (Int, Float)) and not (k.low <= k.high and (k.low > 0 or not k.log)):
                raise InputError(f"{k.name}: the range [{k.low}, {k.high}] must have low <= high, and low > 0 "
                                 "on a log scale")
            if isinstance(k, Choice) and not k.values:
                raise InputError(f"{k.name}: no values to choose from")
            if k.check(k.default):
                raise InputError(f"{k.name}: the default {k.default!r} is not {k.check(k.default)}")

    @property
    def names(self) -> list[str]:
        return [k.name for k in self.knobs]

    def default(self) -> dict[str, Any]:
        return {k.name: k.default for k in self.knobs}

    def describe(self) -> list[dict[str, Any]]:
        """The knobs as plain data (a report's record of what was searched)."""
        return [{"type": type(k).__name__.lower(), **asdict(k)} for k in self.knobs]

    @classmethod
    def from_description(cls, knobs: list[dict[str, Any]]) -> "ConfigSpace":
        """The space `describe()` wrote (read back from a report)."""
        kinds = {"int": Int, "float": Float, "choice": Choice}
        return cls([kinds[k["type"]](**{f: tuple(v) if f == "values" else v for f, v in k.items() if f != "type"})
                    for k in knobs])

    def config(self, u: np.ndarray) -> dict[str, Any]:
        return {k.name: k.value(x) for k, x in zip(self.knobs, u)}

    def point(self, config: dict[str, Any]) -> np.ndarray:
        return np.array([k.unit(config[k.name]) for k in self.knobs])

    def key(self, config: dict[str, Any]) -> tuple:
        """A configuration's identity (floats to 4 significant digits: nearer is the same configuration)."""
        return tuple(float(f"{config[k.name]:.4g}") if isinstance(k, Float) else config[k.name] for k in self.knobs)

    def check(self, config: dict[str, Any]) -> None:
        """InputError naming the first knob that is unknown, missing or out of range."""
        unknown = sorted(set(config) - set(self.names))
        if unknown:
            raise InputError(f"{unknown[0]}: not a knob of this space ({', '.join(self.names)})")
        for k in self.knobs:
            if k.name not in config:
                raise InputError(f"{k.name}: missing")
            problem = k.check(config[k.name])
            if problem:
                raise InputError(f"{k.name}: {config[k.name]!r} is not {problem}")

    def discrete_key(self, u: np.ndarray) -> tuple:
        """The values of the knobs with few values (choices, and integers with at most FEW_VALUES) at u."""
        return tuple(self.knobs[i].value(u[i]) for i in self._few_valued())

    def discrete_neighbours(self, u: np.ndarray) -> np.ndarray:
        """Points whose knobs with few values are one or two values from u's, one or two knobs at a time, and
        points with one number knob at either end of its range; the other knobs as at u."""
        few = self._few_valued()
        moves = {i: self._moves(i, u[i], reach=2) for i in few}
        ends = [_with(u, {i: end}) for i, k in enumerate(self.knobs) if isinstance(k, Float) for end in (0.0, 1.0)]
        return _stack(u, _singles_and_pairs(u, moves, few) + ends)

    def neighbours(self, u: np.ndarray) -> np.ndarray:
        """Points one step from u: every knob moved alone (an integer or a choice by one value, and by half and
        double its value on a log scale; a number by 10 % of its range), and every two
        integer or choice knobs moved by one value together. Steps in values, not in the unit cube, so that an
        integer knob always moves; pairs, because a good setting of one often needs another changed at once
        (executors and cores under a fixed number of cores)."""
        moves = {i: self._moves(i, x) for i, x in enumerate(u)}
        discrete = [i for i, k in enumerate(self.knobs) if not isinstance(k, Float)]
        return _stack(u, _singles_and_pairs(u, moves, discrete, pair_moves=2))

    def _few_valued(self) -> list[int]:
        return [i for i, k in enumerate(self.knobs)
                if isinstance(k, Choice) or isinstance(k, Int) and k.high - k.low + 1 <= FEW_VALUES]

    def _moves(self, i: int, x: float, reach: int = 1) -> list[float]:
        """Unit-cube values up to `reach` values from x on knob i (a number: 10 % of its range either way), nearest
        first; x itself excluded."""
        k = self.knobs[i]
        if isinstance(k, Float):
            steps = [x - 0.1, x + 0.1]
        elif isinstance(k, Choice):
            j = k.values.index(k.value(x))
            steps = [k.unit(k.values[m]) for m in (j - 1, j + 1, j - 2, j + 2)[:2 * reach] if 0 <= m < len(k.values)]
        else:
            v = k.value(x)
            values = [v - 1, v + 1] + ([v // 2, v * 2] if k.log else []) + ([v - 2, v + 2] if reach > 1 else [])
            steps = [k.unit(w) for w in values if k.low <= w <= k.high]
        return [min(max(s, 0.0), 1.0) for s in steps if abs(s - x) > 1e-12]

    def random(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.random((n, len(self.knobs)))

    def latin_hypercube(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n points, one in each of n equal slices of every knob's range (McKay et al.)."""
        d = len(self.knobs)
        slices = np.stack([rng.permutation(n) for _ in range(d)], axis=1)
        return (slices + rng.random((n, d))) / n
