"""A manual override goes through the autoscaler's ports: realized, recorded, saved, reported."""
from elasticity.adapters import InMemoryStateStore, ListEventSink, ManualClock, RecordingRealizer, StaticMetricsSource
from elasticity.autoscaler import JobAutoscaler
from elasticity.config import PolicyConfig
from tests.unit.elasticity.helpers import obs, stage


class FailingRealizer:
    def realize(self, job, decision):
        raise ConnectionError("control endpoint down")


def make(realizer=None):
    clock, src, events, store = ManualClock(1000.0), StaticMetricsSource(), ListEventSink(), InMemoryStateStore()
    src.observation = obs(stage("executors", p=2, rate=1000, busy=0.5), t=1000.0)
    a = JobAutoscaler("j", PolicyConfig(stabilization_window_s=300), metrics=src,
                      realizer=realizer or RecordingRealizer(), store=store, events=events, clock=clock)
    return a, clock, src, events, store


def test_override_realizes_records_saves_and_reports():
    a, clock, src, events, store = make()
    d = a.override({"executors": 4}, "manual override: spec.replicas set to 4", current={"executors": 2})
    assert (d.action, d.policy, d.guard, d.current, d.targets) == ("scale", "manual", "manual",
                                                                    {"executors": 2}, {"executors": 4})
    assert [x.targets for x in a.realizer.applied] == [{"executors": 4}]
    assert events.events[-1][1].reason == "ManualOverride" and "spec.replicas set to 4" in events.events[-1][1].message
    saved = store.load("j")  # the policy's stabilization window runs from the override
    assert saved["last_rescale_at"] == 1000.0 and saved["last_decision"]["guard"] == "manual"


def test_override_current_defaults_to_the_metrics():
    a, *_ = make()
    assert a.override({"executors": 3}, "manual").current == {"executors": 2}


def test_failed_override_is_a_hold_that_changes_nothing():
    a, clock, src, events, store = make(FailingRealizer())
    d = a.override({"executors": 4}, "manual override: spec.replicas set to 4", current={"executors": 2})
    assert (d.action, d.guard, d.targets) == ("hold", "realize_failed", {"executors": 2})
    assert "control endpoint down" in d.reason and events.events[-1][1].reason == "RescaleFailed"
    assert store.load("j").get("last_rescale_at") is None
