"""Executor moves for placement go through the scaling guards: each counts as a rescale."""
from __future__ import annotations

from elasticity.adapters import InMemoryStateStore, ListEventSink, ManualClock
from elasticity.autoscaler import JobAutoscaler
from elasticity.config import PolicyConfig


class RecordingMover:
    def __init__(self, fail: bool = False):
        self.calls: list[list[str]] = []
        self.fail = fail

    def move(self, job, executors):
        if self.fail:
            raise RuntimeError("control endpoint down")
        self.calls.append(list(executors))
        return list(executors)


def _autoscaler(**cfg):
    clock = ManualClock(10_000.0)
    events = ListEventSink()
    a = JobAutoscaler("app", PolicyConfig(**cfg), store=InMemoryStateStore(), events=events, clock=clock)
    return a, clock, events


def test_moves_fit_the_rescale_budget_and_then_stabilize():
    a, clock, events = _autoscaler(max_rescales_per_hour=3, stabilization_window_s=60)
    mover = RecordingMover()
    r = a.move(["1", "2", "3", "4"], "frees node n2", mover)
    assert r["moved"] == ["1", "2", "3"] and "1 wait for the rescale budget" in r["reason"]
    assert a.state.rescale_times == [10_000.0] * 3 and a.state.last_rescale_at == 10_000.0
    assert events.events[-1][1].reason == "ExecutorsMoved"
    clock.advance(30)
    r = a.move(["4"], "frees node n2", mover)
    assert r["moved"] == [] and r["guard"] == "stabilization"
    clock.advance(60)
    r = a.move(["4"], "frees node n2", mover)
    assert r["moved"] == [] and r["guard"] == "rate_limit"
    assert mover.calls == [["1", "2", "3"]]


def test_advisor_mode_only_advises_and_failures_change_nothing():
    a, _, events = _autoscaler(mode="advisor")
    mover = RecordingMover()
    r = a.move(["1"], "frees node n2", mover)
    assert r["guard"] == "advisor" and mover.calls == [] and events.events[-1][1].reason == "MoveAdvised"
    b, _, events = _autoscaler()
    r = b.move(["1"], "frees node n2", RecordingMover(fail=True))
    assert r["guard"] == "realize_failed" and "control endpoint down" in r["reason"]
    assert b.state.rescale_times == [] and events.events[-1][1].type == "Warning"


def test_a_relayout_moves_every_executor_at_once_and_counts_as_one_rescale():
    a, clock, events = _autoscaler(max_rescales_per_hour=2, stabilization_window_s=60)
    mover = RecordingMover()
    r = a.move(["1-1", "2-3", "4-5"], "cuts traffic", mover, together=True)
    assert r["moved"] == ["1-1", "2-3", "4-5"] and "in one reconfiguration" in r["reason"]
    assert a.state.rescale_times == [10_000.0] and mover.calls == [["1-1", "2-3", "4-5"]]
    clock.advance(61)
    assert a.move(["1-1"], "cuts traffic", mover, together=True)["moved"] == ["1-1"]
    clock.advance(61)
    r = a.move(["1-1", "2-3"], "cuts traffic", mover, together=True)
    assert r["moved"] == [] and r["guard"] == "rate_limit" and len(mover.calls) == 2
