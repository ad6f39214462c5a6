"""Baselines: R-Storm (Peng et al., Middleware 2015) and first-fit decreasing on the whole time profile.

R-Storm, as seed 001 ran it ("only CPU as resource"): tasks in BFS order of the topology (index order when there is
no traffic graph); each task goes to the node whose free resource vector is nearest (Euclidean distance) to the
task's demand among the nodes that can hold it -- with one resource this is best fit. R-Storm's bandwidth term
(network distance to the reference node) is constant on a flat cluster and drops out. The demand is a scalar
taken from the load profile: its peak (`demand="peak"`, never overloads) or its mean (`demand="mean"`, what a
resource-aware scheduler sees when it reads an average CPU figure; it overloads at the peaks); or the demand is the
whole profile, one resource dimension per time step (`demand="profile"`, time-aware, never overloads). When no node can
hold a task it goes to the node with the most free resource.

FFD: items by decreasing total load; each to the first bin where the whole profile fits (L_j(t) + x_i(t) <= C_j for
every t); when none fits, to the bin where it adds the least overload.
"""
from __future__ import annotations

from collections import deque

import numpy as np

from elasticity.errors import InputError
from elasticity.placement.model import REL_TOL, Assignment, Bins, Items, compress


def bfs_order(items: Items) -> np.ndarray:
    """Items in breadth-first order of the traffic graph, starting from the lowest-index item of each component
    (the sources come first in a topology's declaration order); index order without traffic."""
    n = items.n
    if items.traffic is None:
        return np.arange(n)
    adj = [np.flatnonzero(items.traffic[i] > 0).tolist() for i in range(n)]
    seen = np.zeros(n, dtype=bool)
    order: list[int] = []
    for root in range(n):
        if seen[root]:
            continue
        seen[root] = True
        queue = deque([root])
        while queue:
            i = queue.popleft()
            order.append(i)
            for k in adj[i]:
                if not seen[k]:
                    seen[k] = True
                    queue.append(k)
    return np.asarray(order, dtype=int)


def rstorm(items: Items, bins: Bins, demand: str = "peak", seed: int | None = None) -> Assignment:
    if demand == "profile":
        return _rstorm_profile(items, bins)
    if demand not in ("peak", "mean"):
        raise InputError(f"R-Storm demand must be 'peak', 'mean' or 'profile', not {demand!r}")
    d = items.loads.max(axis=1) if demand == "peak" else items.loads.mean(axis=1)
    free = bins.capacity.astype(float).copy()
    bin_of = np.zeros(items.n, dtype=int)
    for i in bfs_order(items):
        ok = free >= d[i] - REL_TOL * bins.capacity
        if ok.any():
            dist = np.where(ok, np.abs(free - d[i]), np.inf)
            j = int(np.argmin(dist))
        else:
            j = int(np.argmax(free))
        bin_of[i] = j
        free[j] -= d[i]
    return Assignment(bin_of, f"rstorm-{demand}", {"demand": demand})


def _rstorm_profile(items: Items, bins: Bins) -> Assignment:
    """R-Storm with the whole load profile as the resource vector (one dimension per time step): the node whose free
    profile is nearest to the task's profile among those that hold it at every step."""
    X = compress(items.loads).loads
    C = bins.capacity[:, None] * (1.0 + REL_TOL)
    free = np.broadcast_to(bins.capacity[:, None], (bins.m, X.shape[1])).astype(float).copy()
    bin_of = np.zeros(items.n, dtype=int)
    for i in bfs_order(items):
        ok = np.all(free >= X[i] - (C - bins.capacity[:, None]), axis=1)
        if ok.any():
            dist = np.where(ok, np.linalg.norm(free - X[i], axis=1), np.inf)
            j = int(np.argmin(dist))
        else:
            j = int(np.argmax(free.min(axis=1)))
        bin_of[i] = j
        free[j] -= X[i]
    return Assignment(bin_of, "rstorm-profile", {"demand": "profile"})


def ffd(items: Items, bins: Bins, seed: int | None = None) -> Assignment:
    X = compress(items.loads).loads
    cap = bins.capacity * (1.0 + REL_TOL)
    L = np.zeros((bins.m, X.shape[1]))
    bin_of = np.zeros(items.n, dtype=int)
    for i in np.argsort(-X.sum(axis=1), kind="stable"):
        new = L + X[i]
        ok = np.all(new <= cap[:, None], axis=1)
        if ok.any():
            j = int(np.argmax(ok))
        else:
            added = np.maximum(0, new - cap[:, None]).sum(axis=1) - np.maximum(0, L - cap[:, None]).sum(axis=1)
            j = int(np.argmin(added))
        bin_of[i] = j
        L[j] = new[j]
    return Assignment(bin_of, "ffd")
