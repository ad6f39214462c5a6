"""`elastream`: our placement -- fewest bins with zero overload, found by bin elimination with a weighted tabu search.

1. Small instances (n <= `exact_max_items`, equal capacities): the exact zero-overload optimum by dynamic programming
   over subsets (bounds.exact_min_bins).
2. Otherwise start from the best of first-fit decreasing and best-fit decreasing on the whole time profile.
3. Bin elimination: close the emptiest used bin, put its items where they add the least overload, then drive the
   overload to zero with a tabu search over "move one item" and "swap two items" (the GA's own mutations, but
   chosen best-first among all of them, vectorized): each step takes the best non-tabu move or swap among the items
   of overloaded bins; a moved item may not return to the bin it left for a few steps; when no move lowers the
   overload, the weights of the overloaded (bin, step) cells grow (breakout), which reshapes the landscape so
   complementary peaks get paired. After each step a few random swaps between bins without overload that keep
   both within capacity (plateau swaps) reshape the full bins without changing the overload. When the overload
   reaches zero the bin is gone; repeat until the lower bound max_t ceil(sum_i x_i(t) / C) is reached (then the
   placement is optimal) or the time budget runs out (default_time_limit: 5.5 s for 200 items, 25 s from 1000).
4. When even all the bins cannot hold the load without overload, the same search minimises the overload on all bins.

Everything runs on the compressed profile (model.compress): equal time steps are searched once.
"""
from __future__ import annotations

import time

import numpy as np

from elasticity.placement.bounds import exact_min_bins, lower_bound
from elasticity.placement.model import REL_TOL, Assignment, Bins, Items, compress

MAX_CANDIDATES = 16  # items of overloaded bins considered per tabu step
BREAKOUT = 0.2  # weight added to an overloaded (bin, step) cell when a tabu step does not lower the overload
PLATEAU_SWAPS = 3  # random overload-free swaps between non-overloaded bins after each tabu step
MAX_TIME_LIMIT = 25.0  # default budget of the largest instances: 1000 items end within 30 s, start included


def default_time_limit(n: int) -> float:
    """Seconds for the whole call, start included: 0.5 s + 25 ms per item, at most 25 s (200 items: 5.5 s; 1000
    items: 25 s, which leaves room under 30 s for the last tabu steps and a busy machine)."""
    return min(MAX_TIME_LIMIT, 0.5 + 0.025 * n)


def _ffd(X: np.ndarray, cap: np.ndarray, order: np.ndarray, best_fit: bool) -> np.ndarray:
    m = cap.size
    C = cap[:, None] * (1.0 + REL_TOL)
    L = np.zeros((m, X.shape[1]))
    a = np.zeros(X.shape[0], dtype=int)
    for i in order:
        new = L + X[i]
        ok = np.all(new <= C, axis=1)
        if ok.any():
            if best_fit:  # the used bin left with the least free capacity; a new bin only if none
                used = L.sum(axis=1) > 0
                pool = ok & used if (ok & used).any() else ok
                j = int(np.argmin(np.where(pool, (C - new).sum(axis=1), np.inf)))
            else:
                j = int(np.argmax(ok))
        else:
            added = np.maximum(0, new - C).sum(axis=1) - np.maximum(0, L - C).sum(axis=1)
            j = int(np.argmin(added))
        a[i] = j
        L[j] = new[j]
    return a


def _excess(L: np.ndarray, C: np.ndarray) -> float:
    return float(np.maximum(0.0, L - C).sum())


def tabu_search(X: np.ndarray, cap: np.ndarray, a: np.ndarray, rng: np.random.Generator, deadline: float,
                max_iter: int = 200_000, tenure: tuple[int, int] = (3, 12),
                plateau_swaps: int = PLATEAU_SWAPS) -> tuple[np.ndarray, bool, int]:
    """Minimise the total overload of assignment `a` (values in 0..len(cap)-1) by moves and swaps.
    Returns (best assignment found, whether it has zero overload, iterations).

    Each step takes the best non-tabu move or swap of an item of an overloaded bin (weighted overload; the
    weights of overloaded cells grow on plateaus and climbs). Then `plateau_swaps` times, a random item of a
    non-overloaded bin swaps with a random partner in another non-overloaded bin such that both stay within
    capacity: the overload does not change, but the bins that are full change shape, which opens fits for the
    items of the overloaded bins that no single step would find."""
    k = cap.size
    n, T = X.shape
    a = a.copy()
    C = cap[:, None] * (1.0 + REL_TOL)
    L = np.zeros((k, T))
    np.add.at(L, a, X)
    W = np.ones((k, T))
    tabu = np.zeros((n, k), dtype=np.int32)  # step until which item i may not enter bin b
    buf = np.empty((MAX_CANDIDATES, max(n, k), T))
    best_a, best_ex = a.copy(), _excess(L, C)
    if best_ex == 0.0:
        return best_a, True, 0
    it = 0
    for it in range(1, max_iter + 1):
        E = np.maximum(0.0, L - C)
        viol = E.sum(axis=1) > 0
        if not viol.any():
            return a.copy(), True, it
        if it % 16 == 0 and time.perf_counter() > deadline:
            break
        I = np.flatnonzero(viol[a])
        if I.size > MAX_CANDIDATES:
            I = rng.choice(I, MAX_CANDIDATES, replace=False)
        xi, ai = X[I], a[I]
        nI = I.size
        WE = (W * E).sum(axis=1)
        WI = W[ai]
        slack = L - C  # (k, T): negative where there is room
        base1 = slack[ai] - xi  # bin a_i without item i
        rem = (WI * np.maximum(0.0, base1)).sum(axis=1) - WE[ai]
        bk = buf[:nI, :k]
        np.add(slack[None], xi[:, None], out=bk)  # every bin with item i added
        np.maximum(bk, 0.0, out=bk)
        dmove = rem[:, None] + np.einsum("ikt,kt->ik", bk, W) - WE[None]
        rows = np.arange(nI)
        dmove[rows, ai] = np.inf
        dmove[tabu[I] > it] = np.inf
        bn = buf[:nI]
        np.add(base1[:, None], X[None], out=bn)  # bin a_i with q instead of i
        np.maximum(bn, 0.0, out=bn)
        t1 = np.matmul(bn, WI[:, :, None])[..., 0] - WE[ai][:, None]
        np.add((slack[a] - X)[None], xi[:, None], out=bn)  # bin a_q with i instead of q
        np.maximum(bn, 0.0, out=bn)
        t2 = np.einsum("int,nt->in", bn, W[a]) - WE[a][None]
        dswap = t1 + t2
        dswap[ai[:, None] == a[None]] = np.inf
        dswap[(tabu[I][:, a] > it) | (tabu[:, ai].T > it)] = np.inf
        # random tie-breaking among equally good steps
        dmove += rng.random(dmove.shape) * 1e-7
        dswap += rng.random(dswap.shape) * 1e-7
        jm, js = int(np.argmin(dmove)), int(np.argmin(dswap))
        best_move, best_swap = dmove.flat[jm], dswap.flat[js]
        if not np.isfinite(min(best_move, best_swap)):
            tabu[:] = 0
            continue
        if best_move <= best_swap:
            r, b = divmod(jm, k)
            i = int(I[r])
            old = a[i]
            L[old] -= X[i]
            L[b] += X[i]
            a[i] = b
            tabu[i, old] = it + rng.integers(*tenure)
            delta = best_move
        else:
            r, q = divmod(js, n)
            i = int(I[r])
            bi, bq = a[i], a[q]
            L[bi] += X[q] - X[i]
            L[bq] += X[i] - X[q]
            a[i], a[q] = bq, bi
            tabu[i, bi] = it + rng.integers(*tenure)
            tabu[q, bq] = it + rng.integers(*tenure)
            delta = best_swap
        if delta >= -1e-6:  # a plateau or a climb: make the current overloads weigh more (breakout)
            W[E > 0] += BREAKOUT
        if plateau_swaps:
            _plateau_swaps(X, C, L, a, rng, plateau_swaps)
        ex = _excess(L, C)
        if ex < best_ex:
            best_ex, best_a = ex, a.copy()
            if ex == 0.0:
                return best_a, True, it
    return best_a, best_ex == 0.0, it


def _plateau_swaps(X: np.ndarray, C: np.ndarray, L: np.ndarray, a: np.ndarray, rng: np.random.Generator,
                   count: int) -> None:
    """In place: up to `count` swaps, each of a random item of a non-overloaded bin with a random partner among
    the items of the other non-overloaded bins with which it can swap and leave both bins within capacity."""
    ok = np.all(L <= C, axis=1)
    pool = np.flatnonzero(ok[a])
    if pool.size < 2:
        return
    for _ in range(count):
        p = int(pool[rng.integers(pool.size)])
        bp = a[p]
        d = X - X[p]  # bin bp takes q instead of p: + d[q]; bin a[q] takes p instead of q: - d[q]
        fits = ok[a] & (a != bp) & np.all(L[bp] + d <= C[bp], axis=1) & np.all(L[a] - d <= C[a], axis=1)
        cand = np.flatnonzero(fits)
        if cand.size == 0:
            continue
        q = int(cand[rng.integers(cand.size)])
        bq = a[q]
        L[bp] += d[q]
        L[bq] -= d[q]
        a[p], a[q] = bq, bp


def _close_bin(X: np.ndarray, cap: np.ndarray, a: np.ndarray, drop: int) -> np.ndarray:
    """Items of bin `drop` go, heaviest first, where they add the least overload (ties: the fullest bin);
    the bins are renumbered without `drop`."""
    keep = np.array([j for j in range(cap.size) if j != drop])
    remap = np.full(cap.size, -1)
    remap[keep] = np.arange(keep.size)
    out = remap[a]
    C = cap[keep][:, None] * (1.0 + REL_TOL)
    L = np.zeros((keep.size, X.shape[1]))
    stay = out >= 0
    np.add.at(L, out[stay], X[stay])
    moving = np.flatnonzero(~stay)
    for i in moving[np.argsort(-X[moving].sum(axis=1), kind="stable")]:
        new = L + X[i]
        added = np.maximum(0, new - C).sum(axis=1) - np.maximum(0, L - C).sum(axis=1)
        key = added * 1e6 + (C - new).clip(min=0).sum(axis=1) / (C.sum(axis=1) + 1.0)
        j = int(np.argmin(key))
        out[i] = j
        L[j] = new[j]
    return out


def elastream(items: Items, bins: Bins, seed: int | None = 0, time_limit: float | None = None,
              exact_max_items: int = 14) -> Assignment:
    """Fewest bins with zero overload (see the module doc). time_limit: seconds of search (default by size)."""
    start = time.perf_counter()
    n, m = items.n, bins.m
    if n == 0:
        return Assignment(np.zeros(0, dtype=int), "elastream", {"optimal": True})
    rng = np.random.default_rng(seed)
    budget = default_time_limit(n) if time_limit is None else float(time_limit)
    deadline = start + budget
    lb = lower_bound(items, bins)
    cap_u = bins.uniform_capacity

    if cap_u is not None and n <= exact_max_items:
        exact = exact_min_bins(items, cap_u, max_items=exact_max_items)
        if exact is not None and exact[0] <= m:
            return Assignment(exact[1], "elastream",
                              {"method": "exact", "optimal": True, "lower_bound": lb,
                               "seconds": time.perf_counter() - start})

    X = compress(items.loads).loads
    cap = bins.capacity
    C = cap[:, None] * (1.0 + REL_TOL)
    # capacity order: large bins first, so first fit fills them first (all equal in Table 1)
    by_cap = np.argsort(-cap, kind="stable")
    Xs, caps = X, cap[by_cap]
    starts = []
    for key in (X.sum(axis=1), X.max(axis=1)):
        order = np.argsort(-key, kind="stable")
        for bf in (False, True):
            starts.append(by_cap[_ffd(Xs, caps, order, bf)])

    def score(a: np.ndarray) -> tuple[float, int]:
        L = np.zeros((m, X.shape[1]))
        np.add.at(L, a, X)
        return _excess(L, C), int(np.unique(a).size)

    best = min(starts, key=score)
    best_ex, best_k = score(best)
    info = {"method": "tabu", "lower_bound": lb, "start_nodes": best_k, "eliminated": 0, "iterations": 0}
    if best_ex > 0:  # not enough bins for zero overload: minimise the overload on all of them
        a, ok, its = tabu_search(X, cap, best, rng, deadline)
        info.update(iterations=its, optimal=False)
        return Assignment(a, "elastream", {**info, "seconds": time.perf_counter() - start})

    # bin elimination on the used bins
    used = np.unique(best)
    a = np.searchsorted(used, best)
    ucap = cap[used]
    while used.size > lb and time.perf_counter() < deadline:
        L = np.zeros((used.size, X.shape[1]))
        np.add.at(L, a, X)
        drop = int(np.argmin(L.sum(axis=1) / ucap))
        trial = _close_bin(X, ucap, a, drop)
        keep = np.delete(np.arange(used.size), drop)
        cand, ok, its = tabu_search(X, ucap[keep], trial, rng, deadline)
        info["iterations"] += its
        if not ok:
            break
        used, ucap, a = used[keep], ucap[keep], cand
        info["eliminated"] += 1
    info["optimal"] = bool(used.size <= lb)
    info["seconds"] = time.perf_counter() - start
    return Assignment(used[a], "elastream", info)
