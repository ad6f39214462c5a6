"""storm_apps.traffic on Nimbus's own Thrift structs: rates from per-executor counts, the plan's conf, follows()."""
import pytest

from elasticity.placement.traffic import TrafficPlan
from storm_apps.nimbus import storm_thrift as T
from storm_apps.traffic import PLAN_KEY, default_conf, follows, plan, plan_conf, snapshot, summary, traffic


def _executor(start, component, port, emitted=None, executed=None, latency=1.0, acked=None, complete=None):
    specific = None
    if executed is not None:
        ids = {T.GlobalStreamId(c, s): n for (c, s), n in executed.items()}
        specific = T.ExecutorSpecificStats(bolt=T.BoltStats(
            executed={":all-time": ids}, execute_ms_avg={":all-time": {k: latency for k in ids}}))
    elif acked is not None:
        specific = T.ExecutorSpecificStats(spout=T.SpoutStats(
            acked={":all-time": {"default": acked}}, complete_ms_avg={":all-time": {"default": complete}}))
    stats = T.ExecutorStats(emitted={":all-time": emitted or {}}, specific=specific)
    return T.ExecutorSummary(executor_info=T.ExecutorInfo(start, start), component_id=component, host="h",
                             port=port, stats=stats)


def _info(scale):
    """spout (task 1) -> split (tasks 2, 3) -> sink (task 4); split's task 2 emits 3x what task 3 does."""
    return T.TopologyInfo(id="t", executors=[
        _executor(1, "spout", 7001, emitted={"default": 100 * scale}, acked=100 * scale, complete=20.0 + scale),
        _executor(2, "split", 7001, emitted={"default": 300 * scale}, executed={("spout", "default"): 50 * scale}),
        _executor(3, "split", 7002, emitted={"default": 100 * scale}, executed={("spout", "default"): 50 * scale}),
        _executor(4, "sink", 7002, executed={("split", "default"): 400 * scale}, latency=2.0),
        _executor(-1, "__system", 7001)])


def test_rates_follow_the_receivers_counts_split_by_the_senders_shares():
    measured = traffic(snapshot(_info(1), at=0.0), snapshot(_info(2), at=10.0))
    assert set(measured.executors) == {(1, 1), (2, 2), (3, 3), (4, 4)}  # not __system
    assert measured.rates[((1, 1), (2, 2))] == pytest.approx(5.0)
    assert measured.rates[((2, 2), (4, 4))] == pytest.approx(30.0)  # 400 over 10 s, 3/4 of it from task 2
    assert measured.rates[((3, 3), (4, 4))] == pytest.approx(10.0)
    assert measured.loads[(4, 4)] == pytest.approx(400 * 2.0 / 1000 / 10)
    # complete latency of the window: (200 x 22 - 100 x 21) / 100 acked
    assert measured.complete_latency_ms == pytest.approx(23.0)
    row = summary(measured, lambda host, port: {7001: "a", 7002: "b"}[port])
    assert row["inter_worker_per_s"] == pytest.approx(5.0 + 30.0) and row["nodes"] == 2


def test_a_counter_that_went_back_counts_from_zero():
    measured = traffic(snapshot(_info(5), at=0.0), snapshot(_info(1), at=10.0))
    assert measured.rates[((1, 1), (2, 2))] == pytest.approx(5.0)


def test_the_plan_becomes_the_schedulers_conf_and_the_live_layout_is_checked_against_it():
    measured = traffic(snapshot(_info(1), at=0.0), snapshot(_info(2), at=10.0))
    p = plan(measured, workers=2, free_slots={"a": 1, "b": 1})
    conf = plan_conf(p)
    groups = conf[PLAN_KEY]["workers"]
    assert len(groups) == 2 and sorted(sum((g["executors"] for g in groups), [])) == [[1, 1], [2, 2], [3, 3], [4, 4]]
    assert {g["node"] for g in groups} == {"a", "b"}
    assert default_conf() == {PLAN_KEY: {"workers": []}}
    live = snapshot(_info(2)).executors  # ports 7001: tasks 1, 2; 7002: tasks 3, 4
    node = lambda host, port: {7001: "a", 7002: "b"}[port]  # noqa: E731
    assert follows(TrafficPlan({(1, 1): 0, (2, 2): 0, (3, 3): 1, (4, 4): 1}, {0: "a", 1: "b"}), live, node)
    assert not follows(TrafficPlan({(1, 1): 0, (2, 2): 0, (3, 3): 1, (4, 4): 1}, {0: "b", 1: "a"}), live, node)
    assert not follows(TrafficPlan({(1, 1): 0, (2, 2): 1, (3, 3): 0, (4, 4): 1}, {0: "a", 1: "b"}), live, node)
