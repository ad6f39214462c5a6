"""The Storm engine's pure parts: exporter series -> JobObservation, workers from executors, the rebalance realizer
(with a fake Nimbus: the real one is exercised in tests/storm and tests/e2e)."""
from __future__ import annotations

import json

import pytest

from elastream.api.streamapp import StreamAppSpec
from elastream.engines import engine_for
from elastream.engines.base import MetricsUnavailable
from elastream.engines.storm.observation import parse_exporter, queries, storm_observation, topological
from elastream.engines.storm.realizer import RebalanceRealizer, workers_for
from elasticity.model import Decision

INFO = {"sink": ("bolt", ("count",)), "count": ("bolt", ("split",)), "spout": ("spout", ()), "split": ("bolt", ("spout",))}


def values(**overrides):
    v = {
        "executors": {"spout": 1, "split": 2, "count": 3, "sink": 1},
        "tasks": {"spout": 1, "split": 4, "count": 6, "sink": 1},
        "inputRate": {"spout": 50, "split": 50, "count": 250, "sink": 250},
        "processingRate": {"spout": 50, "split": 50, "count": 240, "sink": 240},
        "emitRate": {"spout": 50, "split": 250, "count": 240, "sink": 0},
        "busyFraction": {"spout": 0.1, "split": 0.2, "count": 0.9, "sink": 0.1},
        "backlog": {"spout": 120},
        "completeLatency": {"spout": 1.5},
    }
    v.update(overrides)
    return v


def test_components_become_stages_in_topological_order_with_their_own_parallelism():
    obs = storm_observation("wc", values(), INFO, 100.0, {"count": 5})
    assert [s.name for s in obs.stages] == ["spout", "split", "count", "sink"]
    assert obs.parallelism == {"spout": 1, "split": 2, "count": 3, "sink": 1}
    count = obs.stage("count")
    assert count.upstream == ("split",) and count.max_parallelism == 5  # the spec's cap is below the 6 tasks
    assert obs.stage("split").max_parallelism == 4  # tasks cap executors when the spec says nothing
    assert obs.stage("spout").backlog == 120 and obs.stage("count").backlog == 0
    assert obs.latency_avg_s == 1.5
    assert obs.stage("split").selectivity() == pytest.approx(5.0)


def test_a_bolts_busiest_executor_is_observed_and_a_spouts_is_not():
    v = values(busyFractionMax={"spout": 0.0, "split": 0.3, "count": 1.0})
    obs = storm_observation("wc", v, INFO, 100.0, {})
    assert obs.stage("count").busy_fraction_max == 1.0 and obs.stage("split").busy_fraction_max == 0.3
    assert obs.stage("spout").busy_fraction_max is None  # a spout's work is the source's
    assert obs.stage("sink").busy_fraction_max is None  # not reported: optional, the mean alone as before
    assert "busyFractionMax" in queries("wc")


def test_a_component_without_its_required_metrics_is_named():
    v = values(busyFraction={"spout": 0.1, "split": 0.2, "sink": 0.1})
    with pytest.raises(MetricsUnavailable, match="count: busyFraction"):
        storm_observation("wc", v, INFO, 100.0, {})
    with pytest.raises(MetricsUnavailable, match="no component"):
        storm_observation("wc", values(), {}, 100.0, {})


def test_topological_order_survives_a_cycle():
    assert topological({"a": ("bolt", ("b",)), "b": ("bolt", ("a",)), "s": ("spout", ())}) == ["s", "a", "b"]


def test_exporter_text_is_read_per_component_and_app():
    text = "\n".join([
        '# TYPE elastream_storm_executors gauge',
        'elastream_storm_executors{app="wc",component="count"} 3.0',
        'elastream_storm_executors{app="other",component="count"} 9.0',
        '# TYPE elastream_storm_component_info gauge',
        'elastream_storm_component_info{app="wc",component="count",kind="bolt",upstream="split,x"} 1.0',
        'elastream_storm_component_info{app="wc",component="spout",kind="spout",upstream=""} 1.0',
    ]) + "\n"
    vals, info = parse_exporter(text, "wc")
    assert vals == {"executors": {"count": 3.0}}
    assert info == {"count": ("bolt", ("split", "x")), "spout": ("spout", ())}


def test_queries_ask_for_one_series_per_component():
    q = queries("wc")
    assert q["busyFraction"] == 'max by (component) (elastream_storm_busy_fraction{app="wc"})'
    assert "pending" not in q and "ackRate" not in q  # not read by the observation: not asked of Prometheus


@pytest.mark.parametrize("executors,per,lo,hi,want", [
    ({"a": 1, "b": 1}, 4, 1, 4, 1), ({"a": 4, "b": 5}, 4, 1, 4, 3), ({"a": 30}, 4, 1, 4, 4), ({"a": 1}, 4, 2, 4, 2)])
def test_workers_follow_the_executors_within_their_range(executors, per, lo, hi, want):
    assert workers_for(executors, per, lo, hi) == want


class FakeNimbus:
    def __init__(self):
        self.calls = []

    def rebalance(self, name, executors, workers, wait_s, conf_overrides=None):
        self.confs = getattr(self, "confs", []) + [conf_overrides]
        self.calls.append(("rebalance", name, executors, workers))

    def wait_rebalanced(self, name, executors, workers, timeout_s):
        self.calls.append(("wait", name, executors, workers))
        return 3.5


def test_the_realizer_rebalances_only_the_components_that_change_and_records_the_stall():
    nimbus, seen = FakeNimbus(), []
    r = RebalanceRealizer(nimbus, "wc-topo", 4, (1, 4), on_rebalance=seen.append)
    d = Decision(job="wc", timestamp=0, policy="ds2", action="scale", current={"split": 1, "count": 2},
                 targets={"split": 1, "count": 6}, reason="x")
    r.realize("wc", d)
    assert nimbus.calls[0] == ("rebalance", "wc-topo", {"count": 6}, 2)
    assert nimbus.calls[1][0] == "wait" and nimbus.calls[1][2] == {"split": 1, "count": 6}
    assert seen[0].layout_s == 3.5 and r.history == seen
    assert nimbus.confs == [None]  # not placed: the topology conf stays as it is
    placed = RebalanceRealizer(nimbus, "wc-topo", 4, (1, 4), ends_plan=True)
    placed.realize("wc", d)
    assert json.loads(nimbus.confs[1]) == {"elastream.placement.plan": {"workers": []}}  # a rescale ends the plan


def test_storm_bounds_come_from_max_parallelism_not_workers():
    spec = StreamAppSpec.model_validate({"engine": "storm", "storm": {
        "attach": {"nimbusHost": "nimbus"}, "workers": {"initial": 1, "min": 1, "max": 2},
        "maxParallelism": {"split": 4, "count": 12}}})
    assert engine_for(spec).parallelism_range(spec) == (1, 12)


def test_zero_executors_are_rejected_with_the_field_named():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="maxParallelism"):
        StreamAppSpec.model_validate({"engine": "storm", "storm": {"maxParallelism": {"count": 0}}})


def test_the_realizer_measures_stalls_in_the_background_and_returns_their_median():
    import threading

    released = threading.Event()

    def probe():
        def wait(t0):
            released.wait(5)
            return 12.0
        return wait

    r = RebalanceRealizer(FakeNimbus(), "wc-topo", 4, (1, 4), stall_probe=probe)
    d = Decision(job="wc", timestamp=0, policy="ds2", action="scale", current={"count": 1}, targets={"count": 2},
                 reason="x")
    assert r.realize("wc", d) is None  # nothing measured yet: realize does not wait for the stall to end
    released.set()
    for _ in range(100):
        if r.history[0].stall_s is not None:
            break
        threading.Event().wait(0.02)
    assert r.history[0].stall_s == 12.0
    assert r.realize("wc", d) == 12.0
