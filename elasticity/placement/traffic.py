"""Seed 002's ETW/WTN for a Storm topology as it runs: a fixed number of workers (the topology's), nodes with
worker slots, executors named by plain ids. A pair that shares a worker exchanges tuples without serialization; a
pair that shares a node, without the network.

- ETW: `greedy.pair_greedy` (executor pairs by descending rate, after Aniello et al.) onto the workers, each capped
  at the mean worker load times (1 + balance); then every worker gets an executor (Storm's default scheduler
  re-spreads a topology that holds fewer workers than it asked for), and single moves and swaps that keep more
  traffic inside workers are taken while they fit.
- WTN: `pair_greedy` over the workers onto the nodes, within their free slots (and capacities, when given).
- `refine=False` leaves out the moves and swaps: seed 002's ETW/WTN as published (the operator's `greedy`).

Whether a running topology should be laid out again is `worth_relayout`: the plan must cut enough of the traffic
the live layout sends between workers and nodes to pay for the rebalance that applies it.

Plain data in and out: executors are any hashable ids, rates a {(a, b): tuples/s} map (either direction; both add
up), loads any non-negative unit (a busy fraction or cores).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Hashable, Mapping

import numpy as np

from elasticity.placement.greedy import pair_greedy

Pair = tuple[Hashable, Hashable]


@dataclass(frozen=True)
class TrafficPlan:
    worker_of: dict[Hashable, int]  # executor -> worker index
    node_of_worker: dict[int, str]  # worker index -> node

    def node_of(self, executor: Hashable) -> str:
        return self.node_of_worker[self.worker_of[executor]]

    def workers(self) -> dict[int, list[Hashable]]:
        out: dict[int, list[Hashable]] = defaultdict(list)
        for e, w in self.worker_of.items():
            out[w].append(e)
        return dict(out)


def undirected(rates: Mapping[Pair, float]) -> dict[Pair, float]:
    """Rates per unordered pair (a, b both ways summed), without self-pairs and zero rates."""
    out: dict[Pair, float] = defaultdict(float)
    for (a, b), r in rates.items():
        if a != b and r > 0:
            out[(a, b) if repr(a) <= repr(b) else (b, a)] += float(r)
    return dict(out)


def cut_rate(rates: Mapping[Pair, float], group_of: Mapping[Hashable, Hashable]) -> float:
    """Tuples/s between executors in different groups (workers or nodes); pairs with an unknown end don't count."""
    return sum(r for (a, b), r in undirected(rates).items()
               if a in group_of and b in group_of and group_of[a] != group_of[b])


@dataclass(frozen=True)
class TrafficCut:
    """Tuples/s a layout sends between workers (serialized) and, of those, between nodes (over the network)."""

    between_workers: float
    between_nodes: float

    @property
    def cost(self) -> float:
        """A tuple between nodes pays for both: serialization and the network."""
        return self.between_workers + self.between_nodes


def cut_of(rates: Mapping[Pair, float], worker_of: Mapping[Hashable, Hashable],
           node_of: Mapping[Hashable, Hashable]) -> TrafficCut:
    return TrafficCut(cut_rate(rates, worker_of), cut_rate(rates, node_of))


def worth_relayout(now: TrafficCut, planned: TrafficCut, min_gain: float = 0.2,
                   min_saving: float = 1.0) -> tuple[bool, str]:
    """Whether applying the plan pays for its rebalance (which restarts the workers it changes): it must cut at
    least `min_gain` of the live layout's cost and `min_saving` tuples/s. Returns (worth it, why in words)."""
    saving = now.cost - planned.cost
    words = (f"tuples/s between workers {now.between_workers:.1f} -> {planned.between_workers:.1f}, between nodes "
             f"{now.between_nodes:.1f} -> {planned.between_nodes:.1f}")
    if saving < min_saving or saving < min_gain * now.cost:
        return False, f"not worth a rebalance: {words} (a plan must cut {min_gain:.0%} and {min_saving:g} tuples/s)"
    return True, words


class TrafficPlacer:
    """`TrafficPlacer(workers).plan(loads, rates, nodes)` -> TrafficPlan."""

    def __init__(self, workers: int, balance: float = 0.25, refine: bool = True):
        if workers < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        if balance < 0:
            raise ValueError(f"balance must be >= 0, not {balance}")
        self.workers, self.balance, self.refine = workers, balance, refine

    def plan(self, loads: Mapping[Hashable, float], rates: Mapping[Pair, float], nodes: Mapping[str, int],
             capacity: Mapping[str, float] | None = None) -> TrafficPlan:
        """loads: executor -> load (every executor to place); rates: (a, b) -> tuples/s; nodes: node -> free slots;
        capacity: node -> the most load it may hold (no bound when absent)."""
        names = sorted((n for n, s in nodes.items() if s > 0))
        slots = np.array([nodes[n] for n in names], dtype=float)
        workers = min(self.workers, len(loads)) or 1
        if slots.sum() < workers:
            raise ValueError(f"{workers} workers need as many free slots; the nodes have {int(slots.sum())}")
        ids = sorted(loads, key=repr)
        index = {e: i for i, e in enumerate(ids)}
        R = np.zeros((len(ids), len(ids)))
        for (a, b), r in undirected(rates).items():
            if a in index and b in index:
                R[index[a], index[b]] = R[index[b], index[a]] = r
        load = np.array([float(loads[e]) for e in ids])
        if not load.sum():
            load = np.ones(len(ids))  # no loads measured: balance the counts instead
        cap = max(load.sum() / workers * (1 + self.balance), load.max(initial=0.0))
        worker = pair_greedy(load[:, None], R, np.full(workers, cap))
        _fill_empty(worker, R, workers)
        if self.refine:
            _refine(worker, R, load, cap, workers)
        onehot = np.zeros((len(ids), workers))
        onehot[np.arange(len(ids)), worker] = 1.0
        between = onehot.T @ R @ onehot
        np.fill_diagonal(between, 0.0)
        node_cap = np.array([float((capacity or {}).get(n, np.inf)) for n in names])
        node = pair_greedy((onehot.T @ load)[:, None], between, node_cap, slots)
        return TrafficPlan({e: int(worker[index[e]]) for e in ids}, {w: names[int(node[w])] for w in range(workers)})


def _fill_empty(worker: np.ndarray, R: np.ndarray, n: int) -> None:
    """Give each empty worker the executor that talks least to its worker-mates, from the most crowded worker."""
    for empty in range(n):
        counts = np.bincount(worker, minlength=n)
        if counts[empty]:
            continue
        crowded = int(np.argmax(counts))
        if counts[crowded] < 2:
            return
        mates = np.flatnonzero(worker == crowded)
        inside = R[np.ix_(mates, mates)].sum(axis=1)
        worker[mates[int(np.argmin(inside))]] = empty


def _refine(worker: np.ndarray, R: np.ndarray, load: np.ndarray, cap: float, n: int, rounds: int = 20) -> None:
    """Single moves, then swaps, that keep more traffic inside workers within the cap, until none is left: the
    greedy pass decides pair by pair, and this repairs what its early choices cost later pairs. No worker is
    emptied."""
    cap += 1e-9

    def pulls(e: int) -> np.ndarray:  # tuples/s between e and each worker's executors
        return np.bincount(worker, weights=R[e], minlength=n)

    for _ in range(rounds):
        improved = False
        held = np.bincount(worker, weights=load, minlength=n)
        counts = np.bincount(worker, minlength=n)
        for e in range(len(worker)):
            own = worker[e]
            pull = pulls(e)
            fits = (held + load[e] <= cap) & (np.arange(n) != own)
            if counts[own] < 2 or not fits.any():
                continue
            best = int(np.argmax(np.where(fits, pull, -np.inf)))
            if pull[best] > pull[own] + 1e-9:
                held[own] -= load[e]; held[best] += load[e]; counts[own] -= 1; counts[best] += 1
                worker[e] = best
                improved = True
        for a in range(len(worker)):
            for b in range(a + 1, len(worker)):
                wa, wb = worker[a], worker[b]
                if wa == wb or held[wa] - load[a] + load[b] > cap or held[wb] - load[b] + load[a] > cap:
                    continue
                pa, pb = pulls(a), pulls(b)
                if pa[wb] - pa[wa] + pb[wa] - pb[wb] - 2 * R[a, b] > 1e-9:
                    worker[a], worker[b] = wb, wa
                    held[wa] += load[b] - load[a]; held[wb] += load[a] - load[b]
                    improved = True
        if not improved:
            return
