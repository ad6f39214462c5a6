"""Pure parts of storm_apps: the replayable source, the verifier, the exporter's rates, the Flux definition and
the reading of Nimbus's Thrift structs. The real cluster runs in tests/local/test_storm_local.py and
tests/e2e/test_operator_storm.py."""
from __future__ import annotations

from collections import deque

import pytest

from spark_apps.profile import make_profile
from storm_apps import verify
from storm_apps.exporter import ALL_TIME, Report, component_values, rates, report_of
from storm_apps.nimbus import layout, storm_thrift, wiring
from storm_apps.source import HOT_WORD, WORDS, ReplayableSource, read_source_state, sentence
from storm_apps.topology import APPS, flux_yaml


def source(tmp_path, rate=10.0, duration=None, now=1000.0):
    return ReplayableSource(make_profile("constant", rate=rate, duration=duration), tmp_path, now)


def test_source_emits_what_is_due_and_commits_on_ack(tmp_path):
    s = source(tmp_path)
    assert s.next_batch(1000.0, 50) == []
    assert s.next_batch(1001.0, 50) == list(range(10))
    assert s.next_batch(1002.0, 4) == [10, 11, 12, 13]  # the limit holds; the rest stays as backlog
    for seq in (0, 1, 3):
        s.ack(seq)
    assert s.committed == 2 and s.acked_above == {3}
    snap = s.snapshot(1002.0)
    assert (snap["offered"], snap["acked"], snap["pending"], snap["backlog"]) == (20, 3, 11, 6)


def test_a_restarted_source_replays_everything_not_acked(tmp_path):
    s = source(tmp_path)
    s.next_batch(1001.0, 50)
    for seq in (0, 1, 2, 5):
        s.ack(seq)
    s.save(1001.0)
    again = ReplayableSource(make_profile("constant", rate=10.0), tmp_path, 5000.0)
    assert again.t0 == 1000.0  # the load profile goes on where it was
    assert again.next_batch(1001.0, 50) == [3, 4, 6, 7, 8, 9]
    assert again.restarts == 1 and again.replayed == 6


def test_a_failed_tuple_is_emitted_again_once(tmp_path):
    s = source(tmp_path)
    s.next_batch(1001.0, 50)
    s.fail(4)
    s.fail(4)  # a second fail of a tuple not in flight changes nothing
    assert s.next_batch(1001.0, 50) == [4]
    assert s.replayed == 1


def test_source_ends_with_its_profile(tmp_path):
    s = source(tmp_path, rate=10.0, duration=2.0)
    assert len(s.next_batch(1010.0, 100)) == 20
    for seq in range(20):
        s.ack(seq)
    s.save(1010.0)
    state = read_source_state(tmp_path)
    assert state["total"] == state["acked"] == 20 and state["pending"] == 0


def test_sentences_are_replayed_identically():
    assert sentence(42) == sentence(42)
    assert 3 <= len(sentence(7).split()) <= 6
    assert sentence(42, 0.5) == sentence(42, 0.5)


def test_a_hot_word_brings_its_share_of_the_words():
    words = [w for seq in range(3000) for w in sentence(seq, 0.6).split()]
    share = words.count(HOT_WORD) / len(words)
    assert share == pytest.approx(0.6 + 0.4 / len(WORDS), abs=0.02)
    even = [w for seq in range(3000) for w in sentence(seq).split()]
    assert even.count(HOT_WORD) / len(even) == pytest.approx(1 / len(WORDS), abs=0.01)


def test_verify_counts_missing_and_duplicates(tmp_path):
    s = source(tmp_path)
    s.next_batch(1000.4, 50)  # records 0..3
    s.save(1000.4)
    (tmp_path / "sink-5-1.txt").write_text("0 0 2\n0 1 2\n1 0 1\n2 0 1\n")
    (tmp_path / "sink-5-2.txt").write_text("2 0 1\n3 0 2\n3 1")  # a duplicate, record 3 half there, a torn line
    check = verify.check(tmp_path)
    assert (check.produced, check.processed, check.missing, check.duplicates) == (4, 3, 1, 1)
    below = verify.check(tmp_path, upto=3)  # a running topology: only records below its committed offset count
    assert (below.produced, below.processed, below.missing) == (3, 3, 0)


def test_rates_use_reports_at_least_the_span_apart():
    reports = deque([Report(0.0, executed=0, execute_ms=0), Report(10.0, executed=100, execute_ms=500),
                     Report(20.0, executed=200, execute_ms=1000)])
    r = rates(reports, now=21.0)
    assert r.executed == pytest.approx(10.0) and r.busy == pytest.approx(0.05)
    assert r.execute_latency_s == pytest.approx(0.005)
    assert rates(deque([Report(0.0), Report(10.0, executed=5)]), now=11.0) is None  # too short a span yet


def test_rates_of_a_quiet_executor_fall_to_zero():
    assert rates(deque([Report(0.0, executed=50)]), now=30.0).executed == 0.0


def test_rates_after_a_counter_reset_are_unknown():
    assert rates(deque([Report(0.0, executed=500), Report(20.0, executed=10)]), now=21.0) is None


def test_a_component_without_every_executor_rate_has_no_rate():
    r = rates(deque([Report(0.0), Report(20.0, executed=200, execute_ms=2000)]), now=20.0)
    assert component_values("bolt", [r, None], None, None).get("processing_rate") is None
    both = component_values("bolt", [r, r], None, None)
    assert both["processing_rate"] == pytest.approx(20.0) and both["busy_fraction"] == pytest.approx(0.1)


def test_the_busiest_executor_shows_a_skew_the_mean_hides():
    idle = rates(deque([Report(0.0), Report(20.0, executed=40, execute_ms=2000)]), now=20.0)  # 10 % busy
    hot = rates(deque([Report(0.0), Report(20.0, executed=360, execute_ms=18000)]), now=20.0)  # 90 % busy
    v = component_values("bolt", [idle, hot], None, None)
    assert v["busy_fraction"] == pytest.approx(0.5) and v["busy_fraction_max"] == pytest.approx(0.9)


def test_spout_values_come_from_the_source_when_there_is_one():
    r = rates(deque([Report(0.0), Report(20.0, emitted=200, acked=180, complete_ms=180 * 40)]), now=20.0)
    v = component_values("spout", [r], {"backlog": 7, "pending": 3}, 12.5)
    assert (v["input_rate"], v["processing_rate"], v["ack_rate"]) == (12.5, 10.0, 9.0)
    assert v["complete_latency_seconds"] == pytest.approx(0.04)
    assert (v["backlog_records"], v["pending_tuples"]) == (7.0, 3.0)
    assert component_values("spout", [r], None, None)["input_rate"] == 10.0


def _executor(component, task, port, executed=None, spout_acked=None):
    t = storm_thrift
    stream = t.GlobalStreamId(componentId="spout", streamId="default")
    tick = t.GlobalStreamId(componentId="__system", streamId="__tick")
    specific = (t.ExecutorSpecificStats(spout=t.SpoutStats(acked={ALL_TIME: {"default": spout_acked}},
                                                           complete_ms_avg={ALL_TIME: {"default": 40.0}}))
                if spout_acked is not None else
                t.ExecutorSpecificStats(bolt=t.BoltStats(executed={ALL_TIME: {stream: executed or 0, tick: 9}},
                                                         execute_ms_avg={ALL_TIME: {stream: 2.0, tick: 0.0}})))
    return t.ExecutorSummary(executor_info=t.ExecutorInfo(task_start=task, task_end=task + 1),
                             component_id=component, host="h", port=port,
                             stats=t.ExecutorStats(emitted={ALL_TIME: {"default": 7, "__ack_ack": 3}},
                                                   specific=specific))


def test_report_of_counts_user_streams_only():
    r = report_of(_executor("split", 1, 6700, executed=100), now=5.0)
    assert (r.executed, r.execute_ms, r.emitted) == (100.0, 200.0, 7.0)
    s = report_of(_executor("spout", 9, 6700, spout_acked=50), now=5.0)
    assert (s.acked, s.complete_ms) == (50.0, 2000.0)


def test_layout_counts_executors_tasks_and_workers():
    info = storm_thrift.TopologyInfo(id="t-1", name="t", status="ACTIVE", executors=[
        _executor("split", 1, 6700), _executor("split", 3, 6701), _executor("__acker", 5, 6700)],
        errors={"split": [storm_thrift.ErrorInfo(error="boom\n at x")]})
    state = layout(info)
    assert state.executors() == {"split": 2} and state.components[0].tasks == 4 and state.workers == 2
    assert state.errors == {"split": "boom"}


def test_wiring_reads_upstream_components():
    t = storm_thrift
    common = t.ComponentCommon(inputs={t.GlobalStreamId(componentId="spout", streamId="default"): t.Opaque(),
                                       t.GlobalStreamId(componentId="__system", streamId="__tick"): t.Opaque()})
    topo = t.StormTopology(spouts={"spout": t.SpoutSpec(common=t.ComponentCommon(inputs={}))},
                           bolts={"split": t.Bolt(common=common)})
    assert wiring(topo) == {"spout": ("spout", ()), "split": ("bolt", ("spout",))}


@pytest.mark.parametrize("app", sorted(APPS))
def test_flux_definition_submits_tasks_at_max_parallelism(app, tmp_path):
    topology = APPS[app]
    flux = flux_yaml("t", app, parallelism={}, max_parallelism=topology.default_max_parallelism, workers=2,
                     generator={"profile": "constant", "rate": 5}, state_dir=tmp_path, python="/usr/bin/python3")
    components = {c["id"]: c for c in flux["spouts"] + flux["bolts"]}
    assert set(components) == {name for name, _, _ in topology.components}
    assert all(c["numTasks"] == topology.default_max_parallelism[n] and c["parallelism"] == 1
               for n, c in components.items())
    assert flux["config"]["topology.acker.executors"] == 1  # acking on
    # plain shuffle: Storm 2's locality-aware one feeds only the executors in the sender's worker
    assert flux["config"]["topology.disable.loadaware.messaging"] is True
    assert {(s["from"], s["to"]) for s in flux["streams"]} == {(u, n) for n, _, ups in topology.components
                                                                 for u in ups}


class FakeNimbus:
    """Counts the Thrift calls the exporter makes; `ids` is what getClusterInfo would say, in turn."""

    def __init__(self, ids):
        self.ids, self.calls, self.gone = list(ids), [], set()

    def topology_id(self, name):
        self.calls.append("lookup")
        return self.ids.pop(0)

    def info_by_id(self, topology_id):
        from storm_apps.nimbus import NimbusRefused

        self.calls.append("info")
        if topology_id in self.gone:
            raise NimbusRefused("NotAliveException")
        return storm_thrift.TopologyInfo(id=topology_id, name="t", status="ACTIVE",
                                         executors=[_executor("split", 1, 6700, executed=10)])

    def graph_by_id(self, topology_id):
        self.calls.append(f"graph {topology_id}")
        return {"split": ("bolt", ("spout",))}


def test_the_exporter_polls_nimbus_once_a_poll_and_looks_the_topology_up_again_only_when_it_is_gone():
    from storm_apps.exporter import StormExporter

    nimbus = FakeNimbus(["t-1", "t-2"])
    exporter = StormExporter(nimbus, "t", "app")
    exporter.poll()
    exporter.poll()
    assert nimbus.calls == ["lookup", "info", "graph t-1", "info"]
    nimbus.gone.add("t-1")  # killed and submitted again: a new id, and its wiring read again
    exporter.poll()
    assert nimbus.calls[4:] == ["info", "lookup", "info", "graph t-2"]
    assert exporter.snapshot.executors == {"split": 1} and exporter.snapshot.graph == {"split": ("bolt", ("spout",))}


def test_a_run_stopped_before_it_drained_reports_its_queue_as_unfinished_not_missing(tmp_path):
    """Records past the spout's committed offset were queued or in flight when a run stopped (a saturated job the
    drain timeout cut short): unfinished. An acked record not whole at the sink is a loss: missing."""
    from elastream.engines.storm.local import StormLocalJob
    from elastream.local import manifest
    from tests.conftest import ROOT

    job = StormLocalJob(manifest.load(ROOT / "tests" / "local" / "storm-short.yaml"), tmp_path, 60.0)
    job.state_dir.mkdir(parents=True)
    s = source(job.state_dir)
    s.next_batch(1000.6, 50)  # records 0..5
    for seq in (0, 1, 2):
        s.ack(seq)
    s.save(1000.6)  # committed 3: 3, 4 and 5 still in flight
    (job.state_dir / "sink-5-1.txt").write_text("0 0 1\n1 0 1\n3 0 2\n")  # 2 acked yet not at the sink: lost
    report = job.verify(stopped_at=1000.6)
    assert (report["records_produced"], report["records_processed"]) == (6, 2)
    assert (report["missing"], report["unfinished"]) == (1, 3)
    assert report["at_least_once"] is False and report["verified"] is False
