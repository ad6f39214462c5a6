"""The genetic algorithm of seed 001 (Melnik, Nasonov, Butakov, IJCCI 2018, section 5), vectorized over the population.

Chromosome: item -> bin map (an (n,) integer vector). Mutations: "move one" (one item to a random bin) and "swap
two" (two random items exchange bins), each with probability 1/2 when an offspring mutates. Crossover: per-item
uniform choice between the two parents. Generational strategy with elitism; the initial population is random.
The paper's parameters are the defaults: crossover probability 0.3 per pair, mutation probability 0.2, elitism 3,
population 100, 1000 iterations.

The paper gives the fitness only in words ("optimization by resources utilization and a number of used nodes with
penalties for overloading"); we use

    fitness = utilization + (1 - used / available) - overload_penalty * overload

with utilization and overload as in the metrics (means over the used bins and time steps, fractions of capacity),
and overload_penalty = 5 by default: calibrated so that this GA lands near the paper's Table 1 (experiments 1 and 4:
about the paper's node counts, with small overloads); with 100 it never overloads but uses ~10 % more nodes.
Parent selection is not named in the paper either; we use binary tournaments.
The whole population is evaluated at once: all bins' loads of all individuals in one sparse one-hot matrix product.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from elasticity.errors import InputError
from elasticity.placement.model import Assignment, Bins, Items, compress


@dataclass(frozen=True)
class GAConfig:
    population: int = 100
    iterations: int = 1000
    crossover: float = 0.3
    mutation: float = 0.2
    elitism: int = 3
    tournament: int = 2
    overload_penalty: float = 5.0
    time_limit: float | None = None  # seconds; None = run all iterations

    def __post_init__(self) -> None:
        if self.population < 2 or self.iterations < 0 or not 0 <= self.elitism < self.population:
            raise InputError("GA needs population >= 2, iterations >= 0 and 0 <= elitism < population")
        if not (0 <= self.crossover <= 1 and 0 <= self.mutation <= 1):
            raise InputError("GA probabilities must be within [0, 1]")


@dataclass
class Evaluation:
    fitness: np.ndarray  # (P,)
    nodes: np.ndarray  # (P,) used bins
    utilization: np.ndarray  # (P,)
    overload: np.ndarray  # (P,)
    extra: dict = field(default_factory=dict)


class PopulationEvaluator:
    """Evaluates many assignments of the same instance at once on a compressed profile."""

    def __init__(self, loads: np.ndarray, weight: np.ndarray, capacity: np.ndarray, overload_penalty: float):
        self.X = np.ascontiguousarray(loads)  # (n, T)
        self.w = np.asarray(weight, dtype=float)  # (T,)
        self.cap = np.asarray(capacity, dtype=float)  # (m,)
        self.m = self.cap.size
        self.n, self.T = self.X.shape
        self.penalty = float(overload_penalty)
        self._cols: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def loads(self, A: np.ndarray) -> np.ndarray:
        """(P, m, T) bin loads of the population A (P, n)."""
        P = A.shape[0]
        if P not in self._cols:
            self._cols[P] = (np.tile(np.arange(self.n), P), np.ones(P * self.n))
        cols, ones = self._cols[P]
        rows = (np.arange(P)[:, None] * self.m + A).ravel()  # (P*n,)
        onehot = sparse.csr_matrix((ones, (rows, cols)), shape=(P * self.m, self.n))
        return np.asarray(onehot @ self.X).reshape(P, self.m, self.T)

    def __call__(self, A: np.ndarray) -> Evaluation:
        P = A.shape[0]
        E = self.loads(A)  # becomes the excess over capacity, in place
        E -= self.cap[None, :, None]
        np.maximum(E, 0.0, out=E)
        excess = (E @ self.w) / self.cap  # (P, m): sum_t w_t max(0, L - C) / C
        rows = (np.arange(P)[:, None] * self.m + A).ravel()
        count = np.bincount(rows, minlength=P * self.m).reshape(P, self.m)
        load = np.bincount(rows, weights=np.tile(self.X @ self.w, P), minlength=P * self.m).reshape(P, self.m)
        nodes = (count > 0).sum(axis=1)
        denom = nodes * self.w.sum()
        over = excess.sum(axis=1) / denom
        util = (load / self.cap).sum(axis=1) / denom - over  # min(L, C) = L - max(0, L - C)
        fit = util + (1.0 - nodes / self.m) - self.penalty * over
        return Evaluation(fit, nodes, util, over)


# --- the genetic operators (pure functions of their random inputs, so they can be tested) -------------------------

def uniform_crossover(p1: np.ndarray, p2: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-item choice: child 1 takes parent 1's bin where mask is True, parent 2's elsewhere; child 2 the opposite."""
    return np.where(mask, p1, p2), np.where(mask, p2, p1)


def mutate_move(A: np.ndarray, rows: np.ndarray, items: np.ndarray, new_bins: np.ndarray) -> None:
    """In place: A[rows[k], items[k]] = new_bins[k]."""
    A[rows, items] = new_bins


def mutate_swap(A: np.ndarray, rows: np.ndarray, i: np.ndarray, j: np.ndarray) -> None:
    """In place: items i[k] and j[k] of individual rows[k] exchange bins."""
    a, b = A[rows, i].copy(), A[rows, j].copy()
    A[rows, i] = b
    A[rows, j] = a


def tournament(fitness: np.ndarray, k: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of `count` winners of k-way tournaments."""
    cand = rng.integers(0, fitness.size, size=(count, k))
    return cand[np.arange(count), np.argmax(fitness[cand], axis=1)]


def evolve(evaluator: PopulationEvaluator, config: GAConfig, rng: np.random.Generator,
           initial: np.ndarray | None = None) -> tuple[np.ndarray, Evaluation, dict]:
    """Run the GA; returns (best chromosome, evaluation of the final population, stats)."""
    P, n, m = config.population, evaluator.n, evaluator.m
    pop = rng.integers(0, m, size=(P, n))
    if initial is not None and len(initial):
        init = np.asarray(initial, dtype=int)[:P]
        pop[: init.shape[0]] = init
    ev = evaluator(pop)
    start = time.perf_counter()
    n_off = P - config.elitism
    n_pairs = (n_off + 1) // 2
    generations = 0
    for _ in range(config.iterations):
        if config.time_limit is not None and time.perf_counter() - start > config.time_limit:
            break
        elite = np.argsort(-ev.fitness, kind="stable")[: config.elitism]
        parents = tournament(ev.fitness, config.tournament, 2 * n_pairs, rng)
        p1, p2 = pop[parents[:n_pairs]], pop[parents[n_pairs:]]
        cross = rng.random(n_pairs) < config.crossover
        mask = rng.random((n_pairs, n)) < 0.5
        mask[~cross] = True  # no crossover: the children are copies of the parents
        c1, c2 = uniform_crossover(p1, p2, mask)
        kids = np.concatenate([c1, c2])[:n_off]
        mutants = np.flatnonzero(rng.random(n_off) < config.mutation)
        if mutants.size:
            moves = rng.random(mutants.size) < 0.5
            mv, sw = mutants[moves], mutants[~moves]
            mutate_move(kids, mv, rng.integers(0, n, mv.size), rng.integers(0, m, mv.size))
            if n > 1:
                i = rng.integers(0, n, sw.size)
                j = (i + rng.integers(1, n, sw.size)) % n
                mutate_swap(kids, sw, i, j)
        pop = np.concatenate([pop[elite], kids])
        ev = evaluator(pop)
        generations += 1
    best = int(np.argmax(ev.fitness))
    return pop[best].copy(), ev, {"generations": generations, "seconds": time.perf_counter() - start,
                                  "fitness": float(ev.fitness[best])}


def ga(items: Items, bins: Bins, seed: int | None = 0, config: GAConfig | None = None,
       initial: np.ndarray | None = None) -> Assignment:
    """The paper's GA with its parameters (or `config`)."""
    config = config or GAConfig()
    prof = compress(items.loads)
    evaluator = PopulationEvaluator(prof.loads, prof.weight, bins.capacity, config.overload_penalty)
    rng = np.random.default_rng(seed)
    best, _, stats = evolve(evaluator, config, rng, initial)
    return Assignment(best, "ga", stats)
