"""R-Storm (best fit by distance, BFS order) and FFD on the whole time profile."""
import numpy as np
import pytest

from elasticity.placement.baselines import bfs_order, ffd, rstorm
from elasticity.placement.model import Bins, Items, evaluate


def test_rstorm_peak_is_best_fit_in_bfs_order():
    items = Items(np.array([[300.0], [250.0], [200.0], [200.0]]))
    a = rstorm(items, Bins.uniform(3, 500.0), demand="peak")
    # 300 -> node 0 (free 200); 250 -> node 1 (free 250); 200 -> node 0 (distance 0); 200 -> node 1 (distance 50)
    np.testing.assert_array_equal(a.bin_of, [0, 1, 0, 1])


def test_mean_demand_overloads_where_peak_demand_does_not():
    t = np.arange(40)
    x = 200 + 100 * np.sin(2 * np.pi * t / 40)
    items = Items(np.vstack([x, x]))  # same phase: peaks coincide at 600 > 500
    bins = Bins.uniform(2, 500.0)
    mean = evaluate(items, bins, rstorm(items, bins, demand="mean"))
    peak = evaluate(items, bins, rstorm(items, bins, demand="peak"))
    assert mean.nodes == 1 and not mean.feasible and mean.overload > 0
    assert peak.nodes == 2 and peak.feasible


def test_profile_aware_methods_pair_anti_phase_items():
    t = np.arange(40)
    s = np.sin(2 * np.pi * t / 40)
    up, down = 250 + 150 * s, 250 - 150 * s  # each peaks at 400; an anti-phase pair sums to a flat 500
    items = Items(np.vstack([up, up, down, down]))
    bins = Bins.uniform(4, 500.0)
    for a in (ffd(items, bins), rstorm(items, bins, demand="profile")):
        m = evaluate(items, bins, a)
        assert m.nodes == 2 and m.feasible
        assert m.utilization == pytest.approx(1.0)
    assert evaluate(items, bins, rstorm(items, bins, demand="peak")).nodes == 4  # 400 + 400 > 500


def test_bfs_order_walks_the_topology():
    R = np.zeros((5, 5))
    R[0, 3] = R[3, 1] = R[0, 4] = 1.0  # 0 -> {3, 4}, 3 -> 1; 2 is alone
    assert bfs_order(Items(np.ones((5, 1)), R)).tolist() == [0, 3, 4, 1, 2]
    assert bfs_order(Items(np.ones((3, 1)))).tolist() == [0, 1, 2]


def test_ffd_falls_back_to_least_overload_when_nothing_fits():
    items = Items(np.array([[400.0], [400.0], [400.0]]))
    a = ffd(items, Bins.uniform(2, 500.0))
    m = evaluate(items, Bins.uniform(2, 500.0), a)
    assert m.nodes == 2 and not m.feasible
