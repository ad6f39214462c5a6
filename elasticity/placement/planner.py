"""The plan: which node each executor should run on, from measured load profiles and node capacities.

    planner = PlacementPlanner(algorithm="elastream")
    plan = planner.plan(executors, nodes)          # executors: [PlacedExecutor], nodes: [NodeCapacity]
    plan.node_of["ns/app/3"], plan.moves, plan.predicted_peak

The solver (elasticity.placement.place) packs the profiles onto as few nodes as it can with no predicted overload.
Its plan replaces the current placement only when it frees at least one node (`min_nodes_saved`): otherwise every
executor stays where it is and the plan only says where new executors go. Among equally good plans the one that
moves the fewest executors is taken (the solver's bins are matched to the nodes that already hold their executors).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import linear_sum_assignment

from elasticity.errors import InputError
from elasticity.placement import Bins, Items, place
from elasticity.placement.model import REL_TOL
from elasticity.placement.profiles import profile

PLAN_ALGORITHMS = ("elastream", "ga", "greedy")


@dataclass
class PlacedExecutor:
    key: str  # unique, e.g. "namespace/app/executor-id"
    group: str  # executors of one group are interchangeable (one app's): "namespace/app"
    node: str | None  # where it runs now (None: not scheduled yet)
    load: np.ndarray  # (T,) cores at each step of the window; NaN where unknown
    request: float = 0.0  # cores its pod requests: the scheduler admits it on a node only if the requests fit


@dataclass
class NodeCapacity:
    name: str
    capacity: float  # cores the placed executors may use on it


@dataclass
class PlacementPlan:
    algorithm: str
    node_of: dict[str, str]  # executor key -> planned node
    predicted_peak: dict[str, float]  # node -> highest predicted load of its planned executors (cores)
    capacity: dict[str, float]
    nodes_used: int
    current_nodes: int  # nodes the executors run on now
    moves: list[str]  # executors whose planned node is not their node
    period_steps: int | None
    group_profile: dict[str, list[float]] = field(default_factory=dict)  # mean executor profile per group
    note: str = ""

    def slots(self, group: str) -> dict[str, int]:
        """Planned executors of a group per node."""
        out: dict[str, int] = {}
        for key, node in self.node_of.items():
            if _group_of(key) == group:
                out[node] = out.get(node, 0) + 1
        return out

    def to_dict(self) -> dict:
        return {"algorithm": self.algorithm, "nodeOf": dict(sorted(self.node_of.items())),
                "predictedPeak": {n: round(v, 3) for n, v in sorted(self.predicted_peak.items())},
                "capacity": {n: round(v, 3) for n, v in sorted(self.capacity.items())},
                "nodesUsed": self.nodes_used, "currentNodes": self.current_nodes, "moves": list(self.moves),
                "periodSteps": self.period_steps, "note": self.note}


def _group_of(key: str) -> str:
    return key.rsplit("/", 1)[0]


class PlacementPlanner:
    """plan(executors, nodes) -> PlacementPlan; choose_node(plan, group, live) for an executor about to start."""

    def __init__(self, algorithm: str = "elastream", seed: int = 0, time_limit_s: float | None = None,
                 min_nodes_saved: int = 1):
        if algorithm not in PLAN_ALGORITHMS:
            raise InputError(f"placement algorithm must be one of {', '.join(PLAN_ALGORITHMS)}, got {algorithm!r}")
        self.algorithm, self.seed, self.time_limit_s = algorithm, seed, time_limit_s
        self.min_nodes_saved = min_nodes_saved

    def plan(self, executors: list[PlacedExecutor], nodes: list[NodeCapacity],
             period_steps: int | None = None) -> PlacementPlan:
        if not nodes:
            raise InputError("no node to place executors on")
        for e in executors:
            if _group_of(e.key) != e.group:
                raise InputError(f"executor key {e.key!r} must start with its group {e.group!r}/")
        names = [n.name for n in nodes]
        capacity = np.array([max(n.capacity, 0.0) for n in nodes])
        if not executors:
            return PlacementPlan(self.algorithm, {}, {}, dict(zip(names, capacity.tolist())), 0, 0, [], None)
        loads, period = profile(np.vstack([e.load for e in executors]), period_steps)
        # the requests are one more "step" of the profile: a plan the scheduler would refuse is no plan
        demand = np.hstack([loads, np.array([[e.request] for e in executors])])
        current = np.array([names.index(e.node) if e.node in names else -1 for e in executors])
        proposed = self._solve(demand, capacity, current)
        used_now = {int(j) for j in current if j >= 0}
        used_plan = {int(j) for j in proposed}
        note = ""
        keep = len(used_now) - len(used_plan) < self.min_nodes_saved and (current >= 0).all()
        if keep and _fits(demand, current, capacity):
            chosen = current
            note = f"the best plan found uses {len(used_plan)} node(s), the executors use {len(used_now)}: none moves"
        else:
            chosen = proposed
            if keep:
                note = "the current placement overloads a node: executors move"
        node_of = {e.key: names[j] for e, j in zip(executors, chosen)}
        peak = {names[j]: float(loads[chosen == j].sum(axis=0).max()) for j in sorted(set(chosen.tolist()))}
        moves = [e.key for e, j in zip(executors, chosen) if e.node != names[j]]
        groups = sorted({e.group for e in executors})
        group_profile = {g: loads[[e.group == g for e in executors]].mean(axis=0).round(4).tolist() for g in groups}
        return PlacementPlan(self.algorithm, node_of, peak, dict(zip(names, capacity.tolist())), len(set(chosen)),
                             len(used_now), moves, period, group_profile, note)

    def _solve(self, loads: np.ndarray, capacity: np.ndarray, current: np.ndarray) -> np.ndarray:
        options = {"time_limit": self.time_limit_s} if self.algorithm == "elastream" and self.time_limit_s else {}
        a = place(Items(loads), Bins(capacity), algorithm=self.algorithm, seed=self.seed, **options)
        return _least_moves(np.asarray(a.bin_of), loads, capacity, current)

    @staticmethod
    def choose_node(plan: PlacementPlan, group: str, live: dict[str, int]) -> str | None:
        """The node for a new executor of `group`, given how many of its executors each node runs or is about
        to: a planned slot not yet taken (most missing first), else the node where the group's mean profile adds
        no overload and leaves the least room (best fit), else None (let the scheduler decide)."""
        missing = {n: k - live.get(n, 0) for n, k in plan.slots(group).items() if k > live.get(n, 0)}
        if missing:
            return max(sorted(missing), key=lambda n: missing[n])
        mean = plan.group_profile.get(group)
        if mean is None:
            return None
        peak = max(mean)
        room = {n: plan.capacity[n] * (1 + REL_TOL) - plan.predicted_peak.get(n, 0.0) - peak for n in plan.capacity}
        fits = {n: r for n, r in room.items() if r >= 0}
        used = {n: r for n, r in fits.items() if n in plan.predicted_peak}
        pool = used or fits
        return min(sorted(pool), key=lambda n: pool[n]) if pool else None


def _fits(loads: np.ndarray, bin_of: np.ndarray, capacity: np.ndarray) -> bool:
    for j in set(bin_of.tolist()):
        if loads[bin_of == j].sum(axis=0).max() > capacity[j] * (1 + REL_TOL):
            return False
    return True


def _least_moves(bin_of: np.ndarray, loads: np.ndarray, capacity: np.ndarray, current: np.ndarray) -> np.ndarray:
    """Relabel the solver's bins onto nodes so that as many executors as possible stay where they are, without
    putting a bin's executors on a node too small for them (the solver's own labels are always allowed)."""
    bins = sorted(set(bin_of.tolist()))
    m = capacity.size
    gain = np.zeros((len(bins), m))
    for r, b in enumerate(bins):
        members = bin_of == b
        peak = loads[members].sum(axis=0).max()
        for j in range(m):
            if j != b and peak > capacity[j] * (1 + REL_TOL):
                gain[r, j] = -1e9  # does not fit there
            else:
                gain[r, j] = np.count_nonzero(current[members] == j) + (1e-3 if j == b else 0.0)
    rows, cols = linear_sum_assignment(gain, maximize=True)
    relabel = {bins[r]: int(c) for r, c in zip(rows, cols)}
    return np.array([relabel[b] for b in bin_of.tolist()])
