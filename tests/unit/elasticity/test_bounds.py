"""RescaleBudgetBound: the least cost with at most k rescales, checked against brute force."""
import itertools

import numpy as np
import pytest

from elasticity.simulation.bounds import (RescaleBudgetBound, full_utilization_needs, interval_weights,
                                          oracle_needs)


def brute_force(needs, start, weights, k):
    """Every set of ≤ k change points; a segment runs at its per-stage max need (the start segment at start)."""
    T = len(needs)
    best = np.inf
    for m in range(k + 1):
        for cuts in itertools.combinations(range(T), m):  # a cut at i: new parallelism from interval i
            bounds = [0, *cuts, T]
            cost, ok = 0.0, True
            for a, b in zip(bounds, bounds[1:]):
                if a == b:
                    continue
                seg = needs[a:b]
                if a == 0 and (not cuts or cuts[0] != 0):
                    if np.any(seg > start):
                        ok = False
                        break
                    p = start
                else:
                    p = seg.max(axis=0)
                cost += weights[a:b].sum() * p.sum()
            if ok:
                best = min(best, cost)
    return best


@pytest.mark.parametrize("seed", range(6))
def test_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    needs = rng.integers(1, 6, size=(7, 2))
    start = np.array([4, 4])
    weights = rng.uniform(1, 3, size=7)
    bound = RescaleBudgetBound(4).fit(needs, start, weights)
    for k in range(5):
        assert bound.cost(k) == pytest.approx(brute_force(needs, start, weights, k))


def test_zero_rescales_is_the_deployed_cost_or_impossible():
    w = np.ones(3)
    assert RescaleBudgetBound(0).fit(np.array([[2], [3], [2]]), np.array([3]), w).cost(0) == 9.0
    assert RescaleBudgetBound(0).fit(np.array([[2], [4], [2]]), np.array([3]), w).cost(0) == np.inf


def test_enough_rescales_reach_the_per_interval_cost_and_more_never_costs_more():
    needs = np.array([[5, 1], [2, 1], [2, 3], [6, 1], [1, 1]])
    bound = RescaleBudgetBound(8).fit(needs, np.array([6, 3]), np.ones(5))
    costs = [bound.cost(k) for k in range(9)]
    assert all(a >= b for a, b in zip(costs, costs[1:]))
    assert costs[-1] == needs.sum()
    assert bound.cost(100) == costs[-1]


def test_a_step_needs_one_rescale_to_follow():
    needs = np.array([[2]] * 5 + [[6]] * 5)
    bound = RescaleBudgetBound(2).fit(needs, np.array([2]), np.full(10, 30.0))
    assert bound.cost(0) == np.inf
    assert bound.cost(1) == (5 * 2 + 5 * 6) * 30.0
    assert bound.cost(2) == bound.cost(1)


def test_interval_helpers():
    assert interval_weights(65, 30, 1.0).tolist() == [30.0, 30.0, 5.0]
    par = np.array([[1], [3], [2], [5], [4]])
    assert oracle_needs(par, 2).ravel().tolist() == [3, 5, 4]

    class FakeOracle:
        caps = [np.array([0.0, 100.0, 200.0, 300.0])]
        scale = [1.0]
        min_p = 1

    needs = full_utilization_needs(FakeOracle(), np.array([50.0, 150.0, 250.0, 250.0, 900.0]), 2)
    assert needs.ravel().tolist() == [1, 3, 3]  # means 100, 250, 900 (capped at the largest parallelism)


# --- past max_intervals: the DP over blocks ---------------------------------------------------------------
def _random_instance(rng):
    T, S = int(rng.integers(1, 41)), int(rng.integers(1, 4))
    needs = rng.integers(1, 9, size=(T, S))
    start = rng.integers(1, 9, size=S)
    weights = rng.uniform(0.1, 5.0, size=T)
    return needs, start, weights


@pytest.mark.parametrize("seed", range(4))
def test_blocks_give_a_floor_under_the_exact_bound_and_the_exact_bound_when_they_fit(seed):
    rng = np.random.default_rng(seed)
    coarse_below_exact = 0
    for _ in range(150):
        needs, start, weights = _random_instance(rng)
        T, k = len(needs), int(rng.integers(0, 6))
        exact = RescaleBudgetBound(k, max_intervals=10_000).fit(needs, start, weights)
        small = int(rng.integers(1, max(T, 2)))  # fewer than T whenever T > 1: blocks of 2 or more
        coarse = RescaleBudgetBound(k, max_intervals=small).fit(needs, start, weights)
        assert exact.block_ == 1 and coarse.block_ == -(-T // small)
        for m in range(k + 1):
            assert coarse.cost(m) <= exact.cost(m) + 1e-9 * max(1.0, exact.cost(m))
            coarse_below_exact += coarse.cost(m) < exact.cost(m) - 1e-9
        fitting = RescaleBudgetBound(k, max_intervals=T).fit(needs, start, weights)
        assert fitting.block_ == 1 and np.array_equal(fitting.costs_, exact.costs_)
    assert coarse_below_exact > 0  # the blocks do lose something: the check above is not vacuous


def test_a_block_needs_the_least_of_its_intervals_and_weighs_their_sum():
    needs = np.array([[3, 1], [1, 4], [2, 2], [5, 5], [6, 1]])
    bound = RescaleBudgetBound(5, max_intervals=2).fit(needs, np.array([9, 9]), np.array([1.0, 2, 3, 4, 5]))
    assert bound.block_ == 3
    # blocks [3,1],[1,4],[2,2] → (1, 1) over 6 s; [5,5],[6,1] → (5, 1) over 9 s; one rescale at 0 then one more
    assert bound.cost(2) == 6 * 2 + 9 * 6
    assert bound.cost(0) == 15 * 18  # the start covers everything


def test_rescales_beyond_the_intervals_cost_what_one_per_interval_does():
    needs = np.array([[2], [5], [1], [4]])
    bound = RescaleBudgetBound(1000).fit(needs, np.array([1]), np.ones(4))
    assert len(bound.costs_) == 1001
    assert bound.cost(1000) == bound.cost(4) == needs.sum()
