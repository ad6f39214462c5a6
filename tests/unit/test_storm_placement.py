"""Storm placement in the operator (elastream.engines.storm.placement and the controller's per-app step), with a
fake Nimbus built from Nimbus's own Thrift structs; the real Nimbus is in tests/e2e/test_operator_storm.py."""
from __future__ import annotations

import json
from types import SimpleNamespace

from controllers.placement_step import _place_app
from elastream.engines.base import AppLayout
from elastream.engines.storm.placement import StormPlacement, scheduler_problem
from elastream.engines.storm.relayout import StormRelayout
from elasticity.adapters import InMemoryStateStore, ListEventSink, ManualClock
from elasticity.autoscaler import JobAutoscaler
from elasticity.config import PolicyConfig
from storm_apps.distribution import SCHEDULER_CLASS
from storm_apps.nimbus import storm_thrift as T

SUPERVISORS = {"sup-a": "10.0.0.1", "sup-b": "10.0.0.2"}  # two slots each: ports 7001, 7003 and 7002, 7004


def _executor(task, component, port, emitted=None, executed=None, latency_ms=10.0):
    specific = None
    if executed is not None:
        ids = {T.GlobalStreamId(c, "default"): n for c, n in executed.items()}
        specific = T.ExecutorSpecificStats(bolt=T.BoltStats(
            executed={":all-time": ids}, execute_ms_avg={":all-time": {k: latency_ms for k in ids}}))
    stats = T.ExecutorStats(emitted={":all-time": {"default": emitted or 0}}, specific=specific)
    return T.ExecutorSummary(executor_info=T.ExecutorInfo(task, task), component_id=component,
                             host=_host(port), port=port, stats=stats)


def _host(port):
    return "10.0.0.1" if port % 2 else "10.0.0.2"


def _info(scale, port_of):
    """spout (1) -> split (2, 3) -> sink (4, light); split[2] sends 3/4 of split's tuples, and the layout puts it
    on the other worker and supervisor than the sink."""
    return T.TopologyInfo(id="topo-1", status="ACTIVE", executors=[
        _executor(1, "spout", port_of[1], emitted=100 * scale),
        _executor(2, "split", port_of[2], emitted=300 * scale, executed={"spout": 50 * scale}),
        _executor(3, "split", port_of[3], emitted=100 * scale, executed={"spout": 50 * scale}),
        _executor(4, "sink", port_of[4], executed={"split": 400 * scale}, latency_ms=0.125)])


class FakeNimbus:
    host, port = "nimbus", 6627

    def __init__(self, scheduler=SCHEDULER_CLASS):
        self.scale, self.scheduler, self.rebalances = 1, scheduler, []
        self.port_of = {1: 7001, 2: 7001, 3: 7002, 4: 7002}  # task -> worker port: one worker per supervisor

    def run(self, plan):
        """Lay the topology out as PlanScheduler would: each planned worker on a free slot of its node."""
        free = {host: [p for p in (7001, 7002, 7003, 7004) if _host(p) == host] for host in SUPERVISORS.values()}
        port_of_worker = {w: free[node].pop(0) for w, node in sorted(plan.node_of_worker.items())}
        self.port_of = {t[0]: port_of_worker[w] for t, w in plan.worker_of.items()}

    def conf(self):
        return {"storm.scheduler": self.scheduler} if self.scheduler else {}

    def topology_id(self, name):
        return "topo-1" if name == "pipe" else None

    def info_by_id(self, topology_id):
        return _info(self.scale, self.port_of)

    def cluster(self):
        return SimpleNamespace(supervisors=[
            T.SupervisorSummary(host=host, supervisor_id=sid, num_workers=2,
                                num_used_workers=sum(1 for p in set(self.port_of.values()) if _host(p) == host))
            for sid, host in SUPERVISORS.items()])

    def rebalance(self, name, executors, workers, wait_s, conf_overrides=None):
        self.rebalances.append(json.loads(conf_overrides))

    def workers_by_id(self, topology_id):
        sid = {host: sid for sid, host in SUPERVISORS.items()}
        return [(sid[_host(p)], _host(p), p) for p in sorted(set(self.port_of.values()))]


def _placement(nimbus, clock):
    job = SimpleNamespace(nimbus=nimbus, topology="pipe", after_relayout=lambda: None)
    return StormPlacement(job_for=lambda *args: job, clock=clock)


def test_it_measures_two_readings_of_a_layout_then_plans_and_moves_when_it_pays():
    nimbus, now = FakeNimbus(), [100.0]
    placement = _placement(nimbus, lambda: now[0])
    policy = SimpleNamespace(placement="elastream")
    first = placement.layout("ns", "app", None, policy)
    assert "first reading" in first.status["message"] and not first.moves
    now[0] += 5
    assert "5s of 15s" in placement.layout("ns", "app", None, policy).status["message"]
    now[0] += 15
    nimbus.scale = 2
    planned = placement.layout("ns", "app", None, policy)
    status = planned.status
    # over 20 s: spout->split[3] (2.5/s) and split[2]->sink (15/s) cross both workers and supervisors
    assert status["traffic"]["betweenWorkers"] == 17.5 and status["traffic"]["betweenNodes"] == 17.5
    # planned: split[2] joins the sink, within the balance cap; both workers on one supervisor's slots
    assert status["traffic"]["plannedBetweenWorkers"] == 7.5 and status["traffic"]["plannedBetweenNodes"] == 0.0
    assert status["executors"]["split[2-2]"] == status["executors"]["sink[4-4]"]
    assert set(status["executors"]) == {"spout[1-1]", "split[2-2]", "split[3-3]", "sink[4-4]"}
    assert status["nodesUsed"] == 1 and set(status["executors"].values()) <= {"10.0.0.1", "10.0.0.2"}
    assert planned.moves and isinstance(planned.mover, StormRelayout) and "between nodes 17.5 -> 0.0" in planned.why
    nimbus.run(planned.mover.plan)  # the relayout, as Nimbus would do it; then the mover reports it applied
    planned.mover.on_applied(planned.mover.plan)
    now[0] += 10
    assert "first reading" in placement.layout("ns", "app", None, policy).status["message"]
    now[0] += 20
    nimbus.scale = 3
    after = placement.layout("ns", "app", None, policy)
    assert after.status["message"].startswith("the topology runs as planned: 2 worker(s) on 1 node(s)"), after.status
    assert not after.moves and after.status["traffic"]["betweenNodes"] == 0.0


def test_a_nimbus_without_the_plan_scheduler_is_named():
    msg = scheduler_problem({}, "nimbus:6627")
    assert msg.startswith("spec.placement:") and SCHEDULER_CLASS in msg and "storm.scheduler" in msg
    placement = _placement(FakeNimbus(scheduler="org.apache.storm.scheduler.DefaultScheduler"), lambda: 0.0)
    layout = placement.layout("ns", "app", None, SimpleNamespace(placement="greedy"))
    assert "DefaultScheduler" in layout.status["message"] and not layout.moves


class RecordingMover:
    def __init__(self):
        self.calls = []

    def move(self, job, executors):
        self.calls.append(list(executors))
        return list(executors)


class FixedPlacement:
    scope = "app"

    def __init__(self, layout):
        self.fixed = layout

    def layout(self, *args):
        return self.fixed


def test_the_controller_applies_a_whole_plan_as_one_rescale_and_waits_after_a_rescale():
    mover = RecordingMover()
    plan = FixedPlacement(AppLayout({"algorithm": "elastream", "message": "m"}, ["a[1-1]", "b[2-3]"], "cuts", mover))
    autoscaler = JobAutoscaler("app", PolicyConfig(stabilization_window_s=60), store=InMemoryStateStore(),
                               events=ListEventSink(), clock=ManualClock(1000.0))
    policy = SimpleNamespace(placement="elastream")
    waited = _place_app(plan, "ns", "app", None, policy, autoscaler, rescaled=True)
    assert waited["lastMove"]["executors"] == [] and "rescaled" in waited["lastMove"]["reason"] and not mover.calls
    moved = _place_app(plan, "ns", "app", None, policy, autoscaler, rescaled=False)
    assert moved["lastMove"]["executors"] == ["a[1-1]", "b[2-3]"] and mover.calls == [["a[1-1]", "b[2-3]"]]
    assert autoscaler.state.rescale_times == [1000.0]
    json.dumps(moved)  # status is plain data


def test_a_plan_nimbus_does_not_run_in_time_still_counts_as_the_rescale_it_was():
    """The rebalance restarted the workers: the move is reported, so the guards hold the next one off."""
    nimbus, now = FakeNimbus(), [0.0]
    placement = _placement(nimbus, lambda: now[0])
    policy = SimpleNamespace(placement="elastream")
    placement.layout("ns", "app", None, policy)
    now[0], nimbus.scale = 20.0, 2
    planned = placement.layout("ns", "app", None, policy)
    planned.mover.timeout_s = 0.0  # Nimbus keeps the old layout (the fake never moves it)
    assert planned.mover.move("app", planned.moves) == planned.moves
    assert nimbus.rebalances[0]["elastream.placement.plan"]["workers"]  # the plan went to Nimbus
    assert placement.apps["ns/app"].applied is None  # ...but it is not the layout in effect
