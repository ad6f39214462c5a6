"""Metrics of the placement model on hand-computed instances."""
import numpy as np
import pytest

from elasticity.errors import InputError
from elasticity.placement.model import Assignment, Bins, Items, compress, evaluate, inter_bin_traffic

# three items over two time steps, C = 500
LOADS = np.array([[300.0, 100.0], [100.0, 300.0], [250.0, 250.0]])
TRAFFIC = np.array([[0, 10, 0], [0, 0, 5], [0, 0, 0]], dtype=float)  # 0-1: 10, 1-2: 5 (made symmetric)


def instance():
    return Items(LOADS, TRAFFIC), Bins.uniform(3, 500.0)


def test_complementary_pair_shares_a_bin_without_overload():
    items, bins = instance()
    m = evaluate(items, bins, Assignment([0, 0, 1]))
    # bin 0: [400, 400], bin 1: [250, 250] -> (400 + 400 + 250 + 250) / (4 * 500)
    assert m.nodes == 2
    assert m.utilization == pytest.approx(0.65)
    assert m.overload == 0.0 and m.overloaded_share == 0.0 and m.feasible
    assert m.inter_bin_traffic == pytest.approx(5.0)


def test_overload_is_averaged_over_used_node_steps():
    items, bins = instance()
    m = evaluate(items, bins, np.array([0, 1, 0]))
    # bin 0: [550, 350] (50 over at t=0), bin 1: [100, 300]
    assert m.nodes == 2
    assert m.utilization == pytest.approx((500 + 350 + 100 + 300) / 2000)
    assert m.overload == pytest.approx((50 / 500) / 4)
    assert m.overloaded_share == pytest.approx(0.25)
    assert not m.feasible
    assert m.inter_bin_traffic == pytest.approx(15.0)


def test_everything_on_one_bin():
    items, bins = instance()
    m = evaluate(items, bins, [2, 2, 2])
    assert m.nodes == 1
    assert m.utilization == pytest.approx(1.0)  # min(L, C) / C caps at 1
    assert m.overload == pytest.approx(150 / 500)
    assert m.overloaded_share == 1.0
    assert m.inter_bin_traffic == 0.0


def test_unequal_capacities_normalise_per_bin():
    items = Items(np.array([[100.0], [300.0]]))
    bins = Bins(np.array([200.0, 400.0]))
    m = evaluate(items, bins, [0, 1])
    assert m.utilization == pytest.approx((0.5 + 0.75) / 2)


def test_traffic_is_symmetrised_and_cut_counted_once():
    r = np.zeros((3, 3))
    r[0, 1] = 4.0
    r[1, 0] = 2.0
    items = Items(np.ones((3, 1)), r)
    assert items.traffic[0, 1] == items.traffic[1, 0] == 6.0
    assert inter_bin_traffic(items.traffic, np.array([0, 1, 1])) == 6.0
    assert inter_bin_traffic(items.traffic, np.array([0, 0, 1])) == 0.0


def test_bad_input_is_rejected():
    with pytest.raises(InputError):
        Items(np.array([[1.0, -1.0]]))
    with pytest.raises(InputError):
        Bins(np.array([0.0]))
    items, bins = instance()
    with pytest.raises(InputError):
        evaluate(items, bins, [0, 1])
    with pytest.raises(InputError):
        evaluate(items, bins, [0, 1, 3])


def test_compress_keeps_distinct_steps_with_their_weights_and_maxima():
    t = np.arange(12)
    x = np.vstack([100 + 50 * np.sin(2 * np.pi * t / 4 + 0.3), np.r_[np.full(11, 5.0), 5.0 + 1e-13]])
    p = compress(x)
    assert p.loads.shape[1] == 4  # period 4 -> 4 distinct columns
    assert p.weight.sum() == 12
    np.testing.assert_array_equal(p.loads[:, p.column], np.maximum(p.loads[:, p.column], x))  # never below x
    assert np.allclose(p.loads[:, p.column], x)
