import numpy as np
import pytest
from sklearn.linear_model import LinearRegression

from elasticity.config import PolicyConfig
from elasticity.policies.base import PolicyContext
from elasticity.policies.mestream import (
    MeStreamPolicy, ThresholdFunction, bottleneck_levels, bottleneck_time, calc_time, closed_form_fit, comm_time,
    mean_error, plan_tasks,
)
from tests.unit.elasticity.helpers import obs, stage


def test_eq6_closed_form_agrees_with_scikit_learn():
    rng = np.random.default_rng(3)
    t = np.sort(rng.uniform(0, 600, 40))
    y = 0.002 * t + 1.5 + rng.normal(0, 0.1, 40)
    w, b = closed_form_fit(t, y)
    lr = LinearRegression().fit(t.reshape(-1, 1), y)
    assert w == pytest.approx(lr.coef_[0], rel=1e-9)
    assert b == pytest.approx(lr.intercept_, rel=1e-9)
    # eq. 4: the least-squares line has the smallest mean error
    assert mean_error(w, b, t, y) < mean_error(w * 1.05, b, t, y)
    assert mean_error(w, b, t, y) < mean_error(w, b + 0.01, t, y)


def test_threshold_function_both_methods_on_epoch_timestamps():
    t = 1.7e9 + np.arange(10) * 30.0
    y = 0.01 * (t - t[0]) + 2.0
    a = ThresholdFunction("sklearn").fit(t, y)
    b = ThresholdFunction("closed_form").fit(t, y)
    assert a.w_ == pytest.approx(0.01, rel=1e-6) and b.w_ == pytest.approx(0.01, rel=1e-6)
    assert float(a.predict(t[-1] + 30)) == pytest.approx(0.01 * 300 + 2.0, rel=1e-6)
    assert float(b.predict(t[-1] + 30)) == pytest.approx(float(a.predict(t[-1] + 30)), rel=1e-9)
    assert a.mse_ == pytest.approx(0.0, abs=1e-12)


def test_eq1_to_3():
    assert calc_time(300.0, 100.0) == 3.0
    assert comm_time(100.0, 50.0, 25.0) == pytest.approx(100 / 50 + 100 / 25)
    assert comm_time(100.0, 50.0, 25.0) == pytest.approx(100 * 75 / (50 * 25))
    assert bottleneck_time([1.0, 2.0], [4.0, 4.0]) == 4.0  # ΣT_comm / 2 = 4 > ΣT_calc = 3
    assert bottleneck_time([3.0, 2.0], [4.0, 4.0]) == 5.0


@pytest.mark.parametrize("executors,tasks,level,expected", [
    (8, 16, 4, 24),   # T1: (8 + 4) / 8 × 16
    (10, 10, 2, 12),  # T2: (10 + 2) / 10 × 10
    (5, 10, 1, 12),   # T3: (5 + 1) / 5 × 10
    (10, 20, 3, 26),  # T4: (10 + 3) / 10 × 20
])
def test_eq7_on_table1_of_the_paper(executors, tasks, level, expected):
    assert plan_tasks(executors, tasks, level, phi=1.0) == expected


def test_eq7_phi_scales_the_plan():
    assert plan_tasks(8, 16, 4, phi=0.5) == 12
    assert plan_tasks(8, 16, 4, phi=1.5) == 36


def test_bottleneck_levels_sort_and_order_of_magnitude():
    times = {"a": 2.0, "b": 9.0, "c": 0.01, "d": 5.0}
    levels = bottleneck_levels(times, reference=4.0, magnitude=10.0)
    assert levels == {"a": 1, "d": 2, "b": 3}  # c is two orders of magnitude below Tr: no bottleneck
    assert bottleneck_levels({"x": 100.0}, reference=4.0) == {}  # T/Tr = 25 ≥ 10


def _history(latencies, step=30.0):
    return [obs(stage("src", p=4, rate=1000, busy=0.9, backlog=0), stage("map", p=2, rate=1000, busy=0.5,
                upstream=["src"]), t=i * step, lat=y) for i, y in enumerate(latencies)]


def test_mestream_scales_out_when_an_effective_bottleneck_recurs():
    hist = _history([1.0, 1.02, 0.98, 1.01, 0.99, 1.0, 6.0, 7.0])
    last = hist[-1]
    last.stages[0].backlog = 6000.0  # the source is the bottleneck: ~6 s of work for 1.1k/s
    ctx = PolicyContext(last, hist, PolicyConfig(algorithm="mestream"), now=last.timestamp)
    p = MeStreamPolicy().propose(ctx)
    assert not p.hold
    assert p.targets["src"] == 5  # level 1 of 1: eq. 7 with N_task = N_executor = 4 → 5
    assert p.targets["map"] == 2  # T(map) ≈ 0.5 s is not of the same order as Tr = 7 s
    assert p.inputs["effective_bottlenecks"] == 2.0


def test_mestream_does_not_act_on_a_single_spike():
    hist = _history([1.0, 1.02, 0.98, 1.01, 0.99, 1.0, 1.0, 7.0])
    hist[-1].stages[0].backlog = 6000.0
    ctx = PolicyContext(hist[-1], hist, PolicyConfig(algorithm="mestream"), now=hist[-1].timestamp)
    p = MeStreamPolicy().propose(ctx)
    assert p.targets == hist[-1].parallelism
    assert "1 effective bottleneck" in p.reason


def test_mestream_holds_without_training_points():
    hist = _history([1.0, 5.0])
    ctx = PolicyContext(hist[-1], hist, PolicyConfig(algorithm="mestream"), now=hist[-1].timestamp)
    p = MeStreamPolicy().propose(ctx)
    assert p.hold and "training points" in p.reason
