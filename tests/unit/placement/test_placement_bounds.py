"""Lower bound and exact optimum on hand-computed and brute-forced instances."""
import itertools

import numpy as np

from elasticity.placement.bounds import exact_min_bins, lower_bound
from elasticity.placement.instances import make_instance
from elasticity.placement.model import Bins, Items, evaluate


def test_lower_bound_is_the_peak_total_over_capacity():
    items = Items(np.array([[300.0, 100.0], [100.0, 300.0], [250.0, 250.0]]))
    assert lower_bound(items, 500.0) == 2  # totals [650, 650]
    assert lower_bound(Items(np.array([[500.0], [500.0]])), 500.0) == 2  # exactly full: not 3
    assert lower_bound(Items(np.array([[500.0], [500.0]])), Bins(np.array([1000.0, 10.0]))) == 1


def test_exact_pairs_anti_phase_sinusoids():
    t = np.arange(40)
    s = np.sin(2 * np.pi * t / 40)
    items = Items(np.vstack([250 + 200 * s, 250 + 200 * s, 250 - 200 * s, 250 - 200 * s]))
    k, bin_of = exact_min_bins(items, 500.0)
    assert k == 2
    assert evaluate(items, Bins.uniform(2, 500.0), bin_of).feasible
    assert bin_of[0] != bin_of[1]  # the two in-phase items cannot share


def brute_force(loads: np.ndarray, cap: float) -> int:
    n = loads.shape[0]
    best = n
    for a in itertools.product(range(n), repeat=n):
        a = np.array(a)
        if a.max() + 1 >= best:  # canonical-ish pruning: only count used labels
            continue
        L = np.zeros((n, loads.shape[1]))
        np.add.at(L, a, loads)
        if np.all(L <= cap * (1 + 1e-9)):
            best = len(set(a.tolist()))
    return best


def test_exact_matches_brute_force_on_random_small_instances():
    rng = np.random.default_rng(7)
    t = np.arange(20)
    for _ in range(6):
        a, b, d = rng.uniform(100, 250, 6), rng.uniform(20, 90, 6), rng.uniform(0, 2 * np.pi, 6)
        loads = a[:, None] + b[:, None] * np.sin(2 * np.pi * t / 20 + d[:, None])
        items = Items(loads)
        k, bin_of = exact_min_bins(items, 500.0)
        assert k == brute_force(loads, 500.0)
        assert k >= lower_bound(items, 500.0)
        m = evaluate(items, Bins.uniform(6, 500.0), bin_of)
        assert m.feasible and m.nodes == k


def test_exact_on_experiment_1_is_at_least_the_bound_and_feasible():
    for seed in range(3):
        items, bins = make_instance(1, seed)
        k, bin_of = exact_min_bins(items, 500.0)
        assert lower_bound(items, bins) <= k <= 12
        assert evaluate(items, bins, bin_of).feasible


def test_exact_declines_large_instances():
    items, _ = make_instance(2, 0)
    assert exact_min_bins(items, 500.0, max_items=14) is None


def test_lp_bound_sits_between_the_simple_bound_and_the_optimum():
    from elasticity.placement.bounds import lp_bound

    items, bins = make_instance(1, 0)
    value, converged = lp_bound(items, 500.0, time_limit=20.0)
    assert converged
    k = exact_min_bins(items, 500.0)[0]
    assert lower_bound(items, bins) - 1 < value <= k + 1e-9
    assert int(np.ceil(value - 1e-9)) >= lower_bound(items, bins)
