"""The placement plan from measured profiles: folding, consolidation, fewest moves, where new executors go."""
from __future__ import annotations

import numpy as np
import pytest

from elasticity.errors import InputError
from elasticity.placement.planner import NodeCapacity, PlacedExecutor, PlacementPlanner
from elasticity.placement.profiles import clean, detect_period, fold, profile

T = 120


def wave(base: float, amp: float, period: int, phase: float, noise: float = 0.0, seed: int = 0) -> np.ndarray:
    t = np.arange(T)
    rng = np.random.default_rng(seed)
    return base + amp * np.sin(2 * np.pi * t / period + phase) + noise * rng.standard_normal(T)


def test_detect_period_finds_the_cycle_and_refuses_noise():
    assert detect_period(wave(1.0, 0.5, 30, 0.3, noise=0.05)) in (29, 30, 31)
    rng = np.random.default_rng(1)
    assert detect_period(1 + 0.1 * rng.standard_normal(T)) is None
    assert detect_period(np.ones(T)) is None
    assert detect_period(wave(1.0, 0.5, 90, 0.0)) is None  # fewer than two cycles in the window
    # complementary loads: the total is flat, each series is not
    assert detect_period(np.vstack([wave(1.0, 0.5, 30, 0.0), wave(1.0, 0.5, 30, np.pi)])) in (29, 30, 31)


def test_fold_keeps_the_highest_load_of_each_phase():
    x = np.array([[1, 2, 3, 4, 5, 0, 9]], dtype=float)
    assert fold(x, 3).tolist() == [[9, 5, 3]]  # phases 0: 1,4,9; 1: 2,5; 2: 3,0


def test_clean_fills_gaps_with_the_series_mean():
    x = clean(np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan]]))
    assert x.tolist() == [[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]


def test_profile_folds_when_periodic():
    loads = np.vstack([wave(1.0, 0.5, 30, 0.0), wave(1.0, 0.5, 30, np.pi)])
    p, period = profile(loads)
    assert period in (29, 30, 31) and p.shape == (2, period)


def _two_apps_complementary(spread_over: list[str]) -> list[PlacedExecutor]:
    """Four executors of two apps whose peaks are half a period apart; each peaks at 0.9 cores."""
    out = []
    for i, (app, phase) in enumerate([("ns/a", 0.0), ("ns/a", 0.0), ("ns/b", np.pi), ("ns/b", np.pi)]):
        out.append(PlacedExecutor(f"{app}/{i}", app, spread_over[i], wave(0.5, 0.4, 30, phase)))
    return out


def test_complementary_peaks_share_nodes_and_the_plan_frees_some():
    nodes = [NodeCapacity(f"n{j}", 1.5) for j in range(4)]  # a pair a+b (1.0 at every step) fits; a+a does not
    executors = _two_apps_complementary(["n0", "n1", "n2", "n3"])
    plan = PlacementPlanner().plan(executors, nodes)
    assert plan.current_nodes == 4 and plan.nodes_used == 2
    for node in set(plan.node_of.values()):  # each used node holds one executor of each app
        assert sorted(k.split("/")[1] for k, n in plan.node_of.items() if n == node) == ["a", "b"]
        assert plan.predicted_peak[node] <= 1.5 + 1e-9
    assert len(plan.moves) == 2  # two executors stay put, two join them
    assert plan.period_steps in (29, 30, 31)


def test_no_move_when_the_plan_saves_no_node():
    nodes = [NodeCapacity("n0", 1.0), NodeCapacity("n1", 1.0)]
    executors = [PlacedExecutor("ns/a/1", "ns/a", "n0", np.full(T, 0.8)),
                 PlacedExecutor("ns/a/2", "ns/a", "n1", np.full(T, 0.8))]
    plan = PlacementPlanner().plan(executors, nodes)
    assert plan.moves == [] and plan.node_of == {"ns/a/1": "n0", "ns/a/2": "n1"}
    assert "none moves" in plan.note


def test_an_overloaded_node_is_relieved_even_without_saving_a_node():
    nodes = [NodeCapacity("n0", 1.0), NodeCapacity("n1", 1.0)]
    executors = [PlacedExecutor("ns/a/1", "ns/a", "n0", np.full(T, 0.8)),
                 PlacedExecutor("ns/a/2", "ns/a", "n0", np.full(T, 0.8))]
    plan = PlacementPlanner().plan(executors, nodes)
    assert sorted(plan.node_of.values()) == ["n0", "n1"] and len(plan.moves) == 1
    assert max(plan.predicted_peak.values()) <= 1.0


def test_choose_node_fills_planned_slots_then_best_fit():
    nodes = [NodeCapacity(f"n{j}", 2.0) for j in range(3)] + [NodeCapacity("n3", 1.0)]
    plan = PlacementPlanner().plan(_two_apps_complementary(["n0", "n1", "n2", "n3"]), nodes)
    slots = plan.slots("ns/a")
    assert sum(slots.values()) == 2
    # a replacement of app a: one of its planned nodes that lacks an executor of a
    live = {n: k for n, k in slots.items()}
    gone = sorted(slots)[0]
    live[gone] -= 1
    assert PlacementPlanner.choose_node(plan, "ns/a", live) == gone
    # a scale-out: all slots taken; the one used node is full (2.0 of 2.0), so the free node it fits best
    assert list(plan.predicted_peak) == ["n0"] and plan.predicted_peak["n0"] == pytest.approx(2.0)
    assert PlacementPlanner.choose_node(plan, "ns/a", dict(slots)) == "n3"
    assert PlacementPlanner.choose_node(plan, "ns/unknown", {}) is None


def test_executor_with_unknown_load_gets_its_mean_and_bad_input_is_refused():
    nodes = [NodeCapacity("n0", 4.0)]
    executors = [PlacedExecutor("ns/a/1", "ns/a", None, np.full(T, np.nan))]
    plan = PlacementPlanner().plan(executors, nodes)
    assert plan.node_of == {"ns/a/1": "n0"}
    with pytest.raises(InputError, match="placement algorithm must be one of"):
        PlacementPlanner("magic")
    with pytest.raises(InputError, match="no node"):
        PlacementPlanner().plan(executors, [])
    with pytest.raises(InputError, match="must start with its group"):
        PlacementPlanner().plan([PlacedExecutor("x/1", "ns/a", None, np.ones(T))], nodes)


@pytest.mark.parametrize("algorithm", ["ga", "greedy"])
def test_other_algorithms_plan_without_overload(algorithm):
    nodes = [NodeCapacity(f"n{j}", 2.0) for j in range(4)]
    plan = PlacementPlanner(algorithm).plan(_two_apps_complementary(["n0", "n1", "n2", "n3"]), nodes)
    assert plan.algorithm == algorithm
    assert all(v <= 2.0 + 1e-9 for v in plan.predicted_peak.values())


def test_requests_bound_the_plan_as_the_scheduler_would():
    """Tiny loads, but requests of 0.6 cores on 1-core nodes: one executor per node, or the scheduler refuses."""
    nodes = [NodeCapacity("n0", 1.0), NodeCapacity("n1", 1.0)]
    executors = [PlacedExecutor(f"ns/a/{i}", "ns/a", f"n{i}", np.full(T, 0.1), request=0.6) for i in range(2)]
    plan = PlacementPlanner().plan(executors, nodes)
    assert plan.moves == [] and plan.nodes_used == 2
    small = [PlacedExecutor(f"ns/a/{i}", "ns/a", f"n{i}", np.full(T, 0.1), request=0.4) for i in range(2)]
    assert PlacementPlanner().plan(small, nodes).nodes_used == 1
