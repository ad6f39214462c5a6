"""The placement model: items with time-series loads and pairwise traffic, bins with capacities, an assignment,
and the metrics of an assignment (used bins, utilization, overload, inter-bin traffic).

Plain data in, plain data out: an `Items` holds an (n, T) array of loads (one row per item, one column per time
step) and an optional symmetric (n, n) array of traffic rates; a `Bins` holds the (m,) capacities; an
`Assignment` is an (n,) array of bin indices. The metrics are those of docs/benchmarks.md ("Placement"):
over the used bins J, nodes = |J|; utilization = mean over j in J, t of min(L_j(t), C_j)/C_j;
overload = mean over j in J, t of max(0, L_j(t) - C_j)/C_j; overloaded share = the share of (j, t) with
L_j(t) > C_j.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from elasticity.errors import InputError

# Loads within this relative tolerance of the capacity count as fitting (floating-point noise only).
REL_TOL = 1e-9


@dataclass(frozen=True)
class Items:
    """Things to place (executors, operators or apps).

    loads: (n, T) load of item i at time step t (a 1-D array is read as constant loads, T = 1).
    traffic: optional (n, n) tuple rates between items; made symmetric (R + R^T) and zero on the diagonal.
    names: optional labels.
    """

    loads: np.ndarray
    traffic: np.ndarray | None = None
    names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        loads = np.asarray(self.loads, dtype=float)
        if loads.ndim == 1:
            loads = loads[:, None]
        if loads.ndim != 2 or loads.shape[1] == 0:
            raise InputError(f"item loads must be an (n, T) array, got shape {np.shape(self.loads)}")
        if not np.all(np.isfinite(loads)) or np.any(loads < 0):
            raise InputError("item loads must be finite and non-negative")
        object.__setattr__(self, "loads", loads)
        n = loads.shape[0]
        if self.traffic is not None:
            r = np.asarray(self.traffic, dtype=float)
            if r.shape != (n, n):
                raise InputError(f"traffic must be ({n}, {n}), got {r.shape}")
            if not np.all(np.isfinite(r)) or np.any(r < 0):
                raise InputError("traffic rates must be finite and non-negative")
            r = r + r.T
            np.fill_diagonal(r, 0.0)
            object.__setattr__(self, "traffic", r)
        if self.names is not None:
            names = tuple(str(s) for s in self.names)
            if len(names) != n:
                raise InputError(f"{len(names)} names for {n} items")
            object.__setattr__(self, "names", names)

    @property
    def n(self) -> int:
        return int(self.loads.shape[0])

    @property
    def horizon(self) -> int:
        return int(self.loads.shape[1])

    def subset(self, index: Sequence[int] | np.ndarray) -> "Items":
        idx = np.asarray(index, dtype=int)
        traffic = None if self.traffic is None else self.traffic[np.ix_(idx, idx)] / 2.0  # re-symmetrised on init
        names = None if self.names is None else tuple(self.names[i] for i in idx)
        return Items(self.loads[idx], traffic, names)


@dataclass(frozen=True)
class Bins:
    """Places to put items (nodes or workers): capacities (m,) in the items' load unit, constant over time."""

    capacity: np.ndarray
    names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        cap = np.atleast_1d(np.asarray(self.capacity, dtype=float))
        if cap.ndim != 1 or cap.size == 0:
            raise InputError("bins need a 1-D array of at least one capacity")
        if not np.all(np.isfinite(cap)) or np.any(cap <= 0):
            raise InputError("bin capacities must be finite and positive")
        object.__setattr__(self, "capacity", cap)
        if self.names is not None and len(self.names) != cap.size:
            raise InputError(f"{len(self.names)} names for {cap.size} bins")

    @classmethod
    def uniform(cls, m: int, capacity: float) -> "Bins":
        if m < 1:
            raise InputError("need at least one bin")
        return cls(np.full(int(m), float(capacity)))

    @property
    def m(self) -> int:
        return int(self.capacity.size)

    @property
    def uniform_capacity(self) -> float | None:
        c = self.capacity
        return float(c[0]) if np.all(c == c[0]) else None


@dataclass(frozen=True)
class Assignment:
    """bin_of[i] = the bin of item i. `algorithm` and `info` say how it was found (plain data)."""

    bin_of: np.ndarray
    algorithm: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "bin_of", np.asarray(self.bin_of, dtype=int).copy())

    def used_bins(self) -> np.ndarray:
        return np.unique(self.bin_of)

    def groups(self) -> dict[int, list[int]]:
        """bin -> the items on it (only used bins)."""
        out: dict[int, list[int]] = {}
        for i, b in enumerate(self.bin_of.tolist()):
            out.setdefault(b, []).append(i)
        return out


@dataclass(frozen=True)
class PlacementMetrics:
    nodes: int
    utilization: float  # fraction, 0..1
    overload: float  # fraction of capacity, mean over used node-steps
    overloaded_share: float  # share of used node-steps with load > capacity
    inter_bin_traffic: float  # sum of traffic rates between items on different bins
    feasible: bool  # no overload at any step

    def as_dict(self) -> dict[str, float]:
        return {
            "nodes": self.nodes,
            "utilization_pct": 100.0 * self.utilization,
            "overload_pct": 100.0 * self.overload,
            "overloaded_steps_pct": 100.0 * self.overloaded_share,
            "inter_bin_traffic": self.inter_bin_traffic,
            "feasible": self.feasible,
        }


def check(items: Items, bins: Bins, assignment: Assignment | np.ndarray) -> np.ndarray:
    """The bin_of array, validated against the instance."""
    a = assignment.bin_of if isinstance(assignment, Assignment) else np.asarray(assignment, dtype=int)
    if a.shape != (items.n,):
        raise InputError(f"assignment has shape {a.shape}, expected ({items.n},)")
    if items.n and (a.min() < 0 or a.max() >= bins.m):
        raise InputError(f"assignment uses a bin outside 0..{bins.m - 1}")
    return a


def bin_loads(loads: np.ndarray, bin_of: np.ndarray, m: int) -> np.ndarray:
    """(m, T) summed loads of each bin."""
    out = np.zeros((m, loads.shape[1]))
    np.add.at(out, bin_of, loads)
    return out


def inter_bin_traffic(traffic: np.ndarray | None, bin_of: np.ndarray) -> float:
    """Sum over unordered pairs {i, k} on different bins of their traffic rate."""
    if traffic is None:
        return 0.0
    cut = bin_of[:, None] != bin_of[None, :]
    return float(traffic[cut].sum() / 2.0)


def evaluate(items: Items, bins: Bins, assignment: Assignment | np.ndarray) -> PlacementMetrics:
    """The metrics of an assignment on the full time profile."""
    a = check(items, bins, assignment)
    if items.n == 0:
        return PlacementMetrics(0, 0.0, 0.0, 0.0, 0.0, True)
    used = np.unique(a)
    L = bin_loads(items.loads, a, bins.m)[used]
    C = bins.capacity[used][:, None]
    util = float(np.mean(np.minimum(L, C) / C))
    excess = np.maximum(0.0, L - C) / C
    over_cells = L > C * (1.0 + REL_TOL)
    return PlacementMetrics(
        nodes=int(used.size),
        utilization=util,
        overload=float(np.mean(np.where(over_cells, excess, 0.0))),
        overloaded_share=float(np.mean(over_cells)),
        inter_bin_traffic=inter_bin_traffic(items.traffic, a),
        feasible=not bool(over_cells.any()),
    )


@dataclass(frozen=True)
class Profile:
    """A compressed time profile for the search: the distinct columns of the loads (column groups that agree up to
    rounding), each represented by its per-item maximum so that fitting here implies fitting on every step, with
    the number of steps it stands for. Exactly lossless for feasibility; utilization sums use `weight`."""

    loads: np.ndarray  # (n, T')
    weight: np.ndarray  # (T',) number of original steps per column
    column: np.ndarray  # (T,) original step -> compressed column


def compress(loads: np.ndarray, decimals: int = 7) -> Profile:
    X = np.asarray(loads, dtype=float)
    scale = float(np.max(np.abs(X))) or 1.0
    key = np.round(X / scale, decimals)
    _, first, inverse, counts = np.unique(key, axis=1, return_index=True, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    out = np.full((X.shape[0], counts.size), -np.inf)
    np.maximum.at(out.T, inverse, X.T)
    return Profile(out, counts.astype(float), inverse)


def fits(load: np.ndarray, capacity: float | np.ndarray) -> np.ndarray | bool:
    """load <= capacity (with a relative tolerance for rounding) at every step of the last axis."""
    cap = np.asarray(capacity, dtype=float)
    return np.all(load <= cap * (1.0 + REL_TOL), axis=-1)
