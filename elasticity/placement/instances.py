"""The instances of Table 1 of seed 001 (Melnik et al., IJCCI 2018) and the paper's published numbers.

x_i(t) = a_i + b_i * sin(2*pi*t/c_i + d_i), t = 0..179, node capacity C = 500 tuples per time unit.
The paper does not say how periods and phases were drawn; its simulator uses period 40 for every operator, so the
protocol (docs/benchmarks.md) fixes c = 40 and d ~ U[0, 2*pi); `period="random"` draws c ~ U[20, 60] instead
(the sensitivity run). Instance k of experiment e is drawn from SeedSequence([e, seed_base + k]).

Experiment 8 is ours, not the paper's: experiment 4's distributions (a ~ U[100, 200], b ~ U[40, 60]) at five
times the size, 1000 operators on 500 nodes, to check that the solvers scale. It has no published numbers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from elasticity.errors import InputError
from elasticity.placement.model import Bins, Items

CAPACITY = 500.0
HORIZON = 180
PERIOD = 40.0


@dataclass(frozen=True)
class Experiment:
    number: int
    operators: int
    nodes: int
    a: tuple[float, float]
    b: tuple[float, float]
    # the paper's Table 1 (None for our own experiments)
    rstorm_nodes: float | None
    ga_nodes: float | None
    rstorm_util_pct: float | None
    ga_util_pct: float | None
    ga_overload_pct: float | None


_AB1 = ((100.0, 200.0), (40.0, 60.0))
_AB2 = ((90.0, 150.0), (30.0, 80.0))

TABLE1: dict[int, Experiment] = {
    1: Experiment(1, 12, 9, *_AB1, 5.3, 4.3, 69.3, 86.2, 0.01),
    2: Experiment(2, 50, 25, *_AB1, 19.7, 18.2, 75.5, 82.9, 0.02),
    3: Experiment(3, 100, 50, *_AB1, 38.8, 35.8, 77.1, 83.7, 0.02),
    4: Experiment(4, 200, 100, *_AB1, 73.7, 72.8, 78.1, 81.6, 0.02),
    5: Experiment(5, 50, 25, *_AB2, 16.8, 15.5, 71.0, 78.4, 0.01),
    6: Experiment(6, 100, 50, *_AB2, 33.0, 31.6, 72.4, 78.9, 0.01),
    7: Experiment(7, 200, 100, *_AB2, 61.6, 60.2, 72.5, 78.4, 0.01),
}

# Table 1 and our scale experiment (8: experiment 4's distributions, 1000 operators, 500 nodes; not in the paper)
EXPERIMENTS: dict[int, Experiment] = {
    **TABLE1,
    8: Experiment(8, 1000, 500, *_AB1, None, None, None, None, None),
}


def sinusoid_loads(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray, horizon: int = HORIZON) -> np.ndarray:
    t = np.arange(horizon, dtype=float)
    return a[:, None] + b[:, None] * np.sin(2.0 * np.pi * t[None, :] / c[:, None] + d[:, None])


def make_instance(exp: int | Experiment, seed: int, period: str = "fixed") -> tuple[Items, Bins]:
    """Instance `seed` of an experiment (Table 1's 1-7 or our 8): (items, bins)."""
    if isinstance(exp, int) and exp not in EXPERIMENTS:
        raise InputError(f"no experiment {exp}; choose from {sorted(EXPERIMENTS)}")
    e = EXPERIMENTS[exp] if isinstance(exp, int) else exp
    if period not in ("fixed", "random"):
        raise InputError(f"period must be 'fixed' or 'random', not {period!r}")
    rng = np.random.default_rng(np.random.SeedSequence([e.number, int(seed)]))
    n = e.operators
    a = rng.uniform(*e.a, size=n)
    b = rng.uniform(*e.b, size=n)
    d = rng.uniform(0.0, 2.0 * np.pi, size=n)
    c = np.full(n, PERIOD) if period == "fixed" else rng.uniform(20.0, 60.0, size=n)
    names = tuple(f"t{i}" for i in range(n))
    return Items(sinusoid_loads(a, b, c, d), names=names), Bins.uniform(e.nodes, CAPACITY)
