"""Optimisers over a ConfigSpace, with one interface: `ask()` a configuration, `tell(config, value)` what it scored
(lower is better; None: it failed). Every method starts from the default configuration and never proposes a
configuration it has seen, failed ones included (seed 004's FailConf).

- `RandomSearch`: uniform samples.
- `HillClimb`: Latin-hypercube starts, then Gaussian steps around the best point, narrowing after misses and
  restarting from a fresh start when the step is spent (Bilal & Canini, SoCC'17: the best black-box method on Storm).
- `BayesOpt`: Latin-hypercube starts, then a random-forest surrogate of log(value) and the candidate with the highest
  expected improvement (seed 004). The forest's spread over its trees is the uncertainty. The forest is
  scikit-learn's ExtraTreesRegressor with bootstrap (extremely randomized trees): its random split thresholds make
  the mean vary smoothly between samples, where RandomForestRegressor's is flat between its splits and EI has
  little to go by (measured: with it, BO lost to random search on a smooth 3-knob bowl at 25 evaluations). A
  failed configuration is taught as worse than the worst seen, so the model learns where failures lie.
  When the best has not improved for `patience` evaluations, the untried settings next door to it
  (ConfigSpace.discrete_neighbours: its few-valued knobs one or two values away, one or two at a time, and its
  numbers at the ends of their ranges) are tried first, the most promising first: a forest cannot tell that a
  setting it never saw (4 executors x 2 cores beside 6 x 1) may be a better basin.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.stats import norm
from sklearn.ensemble import ExtraTreesRegressor

from elasticity.tuning.space import ConfigSpace


class _Optimizer:
    def __init__(self, space: ConfigSpace, seed: int = 0):
        self.space = space
        self.rng = np.random.default_rng(seed)
        self.seen: set[tuple] = set()
        self.points: list[np.ndarray] = []
        self.values: list[float | None] = []

    def ask(self) -> dict[str, Any]:
        if not self.points:
            return self.space.default()
        for u in self._candidates():
            config = self.space.config(u)
            if self.space.key(config) not in self.seen:
                return config
        for u in self.space.random(self.rng, 1000):  # every candidate was seen: anything new
            config = self.space.config(u)
            if self.space.key(config) not in self.seen:
                return config
        raise LookupError("every configuration of this space has been tried")

    def tell(self, config: dict[str, Any], value: float | None) -> None:
        self.seen.add(self.space.key(config))
        self.points.append(self.space.point(config))
        self.values.append(None if value is None or not math.isfinite(value) else float(value))

    def best(self) -> tuple[np.ndarray, float] | None:
        passed = [(u, v) for u, v in zip(self.points, self.values) if v is not None]
        return min(passed, key=lambda p: p[1]) if passed else None

    def _candidates(self) -> np.ndarray:
        raise NotImplementedError


class RandomSearch(_Optimizer):
    def _candidates(self) -> np.ndarray:
        return self.space.random(self.rng, 64)


class HillClimb(_Optimizer):
    def __init__(self, space: ConfigSpace, seed: int = 0, starts: int = 5, step: float = 0.2,
                 min_step: float = 0.02, patience: int = 3):
        super().__init__(space, seed)
        self.queue = list(space.latin_hypercube(self.rng, starts))  # points to try before climbing
        self.step0, self.min_step, self.patience = step, min_step, patience
        self.step, self.misses = step, 0
        self.climb: tuple[np.ndarray, float] | None = None  # the best point of the current climb

    def tell(self, config: dict[str, Any], value: float | None) -> None:
        super().tell(config, value)
        if len(self.points) == 1:
            return  # the default
        u = self.points[-1]
        if self.queue:  # a start (or a restart) was tried
            self.queue.pop(0)
            if value is not None and (self.climb is None or value < self.climb[1]):
                self.climb = (u, value)
            return
        if value is not None and (self.climb is None or value < self.climb[1]):
            self.climb, self.misses = (u, value), 0
            return
        self.misses += 1
        if self.misses >= self.patience:
            self.step, self.misses = self.step / 2, 0
        if self.step < self.min_step:  # this hill is climbed: restart somewhere new
            self.queue.append(self.space.random(self.rng, 1)[0])
            self.step, self.climb = self.step0, None

    def _candidates(self) -> np.ndarray:
        if self.queue:
            return np.array(self.queue[:1])
        centre = self.climb[0] if self.climb is not None else self.space.random(self.rng, 1)[0]
        return np.clip(centre + self.step * self.rng.standard_normal((32, len(centre))), 0.0, 1.0)


class BayesOpt(_Optimizer):
    """Objectives must be positive (a latency, a cost): the forest is fitted to their logarithm."""

    def __init__(self, space: ConfigSpace, seed: int = 0, starts: int = 5, trees: int = 50, pool: int = 600,
                 xi: float = 0.01, neighbourhood: int = 3, patience: int = 10):
        super().__init__(space, seed)
        self.neighbourhood, self.patience = neighbourhood, patience
        self.sweep: list[np.ndarray] = []  # discrete neighbours of a stalled incumbent, still to try
        self.stalled = 0  # evaluations since the best last improved
        self.swept: set[tuple] = set()
        self.starts = list(space.latin_hypercube(self.rng, starts))
        self.trees, self.pool, self.xi = trees, pool, xi

    def _candidates(self) -> np.ndarray:
        tried = len(self.points) - 1
        if tried < len(self.starts) or self.best() is None:
            return np.array(self.starts[tried:] or list(self.space.random(self.rng, 8)))
        X, y = self._training_set()
        forest = ExtraTreesRegressor(n_estimators=self.trees, bootstrap=True,
                                     random_state=int(self.rng.integers(1 << 31))).fit(X, y)
        self.sweep = [u for u in self.sweep if self.space.key(self.space.config(u)) not in self.seen]
        pool = np.array(self.sweep) if self.sweep else self._pool(X, y)
        per_tree = np.stack([t.predict(pool) for t in forest.estimators_])
        mu, sigma = per_tree.mean(axis=0), per_tree.std(axis=0) + 1e-9
        return pool[np.argsort(-expected_improvement(mu, sigma, y.min(), self.xi))]

    def tell(self, config: dict[str, Any], value: float | None) -> None:
        before = self.best()
        super().tell(config, value)
        improved = value is not None and (before is None or value < before[1] * 0.995)
        self.stalled = 0 if improved else self.stalled + 1
        if improved:
            self.sweep = []
        incumbent = self.best()
        if self.stalled >= self.patience and not self.sweep and incumbent is not None:
            key = self.space.key(self.space.config(incumbent[0]))
            if key not in self.swept:  # the model has stopped finding better: try the settings next door
                self.swept.add(key)
                self.sweep = list(self.space.discrete_neighbours(incumbent[0]))
                self.stalled = 0

    def _training_set(self) -> tuple[np.ndarray, np.ndarray]:
        """log(value) of the passed configurations; failed ones one unit (×e) worse than the worst passed."""
        logs = [math.log(max(v, 1e-12)) for v in self.values if v is not None]
        worst = max(logs) + 1.0
        y = np.array([math.log(max(v, 1e-12)) if v is not None else worst for v in self.values])
        return np.vstack(self.points), y

    def _pool(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Random points, and neighbours of the five best (one knob at a time, and all at once at two scales), as
        SMAC searches its acquisition: the forest's mean is flat between its splits, so EI is maximised near the
        points that did well as much as far from every point. Plus the value-step neighbours
        (ConfigSpace.neighbours) of the best point of each of the `neighbourhood` best discrete settings."""
        d = X.shape[1]
        local = []
        for centre in X[np.argsort(y)[:5]]:
            one = np.repeat(centre[None, :], 4 * d, axis=0)
            dims = np.repeat(np.arange(d), 4)
            one[np.arange(4 * d), dims] += 0.1 * self.rng.standard_normal(4 * d)
            local += [one] + [centre + s * self.rng.standard_normal((10, d)) for s in (0.03, 0.1)]
        if self.neighbourhood:
            local += [self.space.neighbours(centre) for centre in self._distinct_best(X, y, self.neighbourhood)]
        return np.clip(np.vstack([self.space.random(self.rng, self.pool // 2), *local]), 0.0, 1.0)

    def _distinct_best(self, X: np.ndarray, y: np.ndarray, n: int) -> list[np.ndarray]:
        """The best point of each of the n best settings of the discrete knobs: local search around several
        basins, not only around the best one."""
        out, keys = [], set()
        for i in np.argsort(y):
            key = self.space.discrete_key(X[i])
            if key not in keys:
                keys.add(key)
                out.append(X[i])
            if len(out) == n:
                break
        return out


def expected_improvement(mu: np.ndarray, sigma: np.ndarray, best: float, xi: float = 0.0) -> np.ndarray:
    """E[max(best - xi - f, 0)] for f ~ N(mu, sigma²), minimising."""
    z = (best - xi - mu) / sigma
    return (best - xi - mu) * norm.cdf(z) + sigma * norm.pdf(z)


OPTIMIZERS = {"bo": BayesOpt, "random": RandomSearch, "hillclimb": HillClimb}
