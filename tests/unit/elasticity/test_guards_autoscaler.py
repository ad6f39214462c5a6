"""Every guard blocks what it should; the autoscaler goes through the ports."""
import pytest

from elasticity.adapters import InMemoryStateStore, ListEventSink, ManualClock, RecordingRealizer, StaticMetricsSource
from elasticity.autoscaler import JobAutoscaler
from elasticity.config import PolicyConfig
from elasticity.policies.base import Proposal
from elasticity.ports import MetricsUnavailable
from tests.unit.elasticity.helpers import obs, stage


class FixedPolicy:
    """Proposes whatever the test sets."""

    name = "fixed"
    required_metrics = ("input_rate", "processing_rate", "utilization")

    def __init__(self, targets):
        self.targets = dict(targets)
        self.follow_up_after_s = None
        self.at_bounds = False

    def propose(self, ctx):
        return Proposal(dict(self.targets), f"fixed wants {self.targets}", {"x": 1.0},
                        follow_up_after_s=self.follow_up_after_s, at_bounds=self.at_bounds)


def make(targets, **cfg):
    clock = ManualClock(1000.0)
    src = StaticMetricsSource()
    realizer = RecordingRealizer()
    events = ListEventSink()
    store = InMemoryStateStore()
    defaults = dict(stabilization_window_s=300, scale_down_delay_s=600, max_rescales_per_hour=6)
    defaults.update(cfg)
    a = JobAutoscaler("j", PolicyConfig(**defaults), metrics=src, realizer=realizer, store=store, events=events,
                      clock=clock, policy=FixedPolicy(targets))
    return a, src, clock, realizer, events, store


def o(p=4, t=1000.0, backlog=0.0, maxp=None, busy=None):
    """1k/s on p instances of 500/s each: the true processing rate grows with p (scale-ups are effective)."""
    busy = 2.0 / p if busy is None else busy
    return obs(stage("src", p=p, rate=1000, busy=busy, backlog=backlog, maxp=maxp), t=t)


def test_scale_goes_through_the_ports():
    a, src, clock, realizer, events, store = make({"src": 6})
    src.observation = o()
    d = a.scale()
    assert d.action == "scale" and d.targets == {"src": 6} and d.current == {"src": 4}
    assert len(realizer.applied) == 1 and realizer.applied[0].targets == {"src": 6}
    assert events.events[-1][1].reason == "Rescaled"
    assert store.load("j")["last_rescale_at"] == 1000.0
    assert d.inputs["x"] == 1.0


def test_hold_on_missing_metrics():
    a, src, *_ = make({"src": 6})
    src.observation = None
    d = a.scale()
    assert d.hold and d.reason == "hold: no metrics" and d.guard == "metrics"
    src.observation = obs(stage("src", p=4, rate=1000, busy=None), t=1000.0)
    d = a.scale()
    assert d.hold and "missing for stage src: busy_fraction" in d.reason


class FailingSource:
    """A metrics source that cannot read the job's metrics and says why."""

    def observe(self, job):
        raise MetricsUnavailable("Prometheus is unreachable at http://prom:9090")


def test_a_source_that_says_why_it_has_no_metrics_is_quoted_in_the_hold_and_warned_about_once():
    a, *_, events, _ = make({"src": 6})
    a.metrics = FailingSource()
    d = a.scale()
    assert d.hold and d.guard == "metrics"
    assert d.reason == "hold: no metrics (Prometheus is unreachable at http://prom:9090)"
    a.scale()
    assert [(e.type, e.reason) for _, e in events.events] == [("Warning", "MetricsUnavailable")]


def test_metrics_missing_just_after_a_rescale_are_awaited_then_warned_about():
    """A Storm rebalance restarts the workers: their metrics are gone for a while. That is expected for
    RESCALE_SETTLE_S after the rescale (a Normal event), a fault after it (a Warning)."""
    a, src, clock, realizer, events, _ = make({"src": 6})
    src.observation = o()
    assert a.scale().action == "scale"
    a.metrics = FailingSource()
    clock.t += 30
    d = a.scale()
    assert d.hold and d.guard == "settling" and "30 s after a rescale: the job restarts" in d.reason
    assert (events.events[-1][1].type, events.events[-1][1].reason) == ("Normal", "AwaitingMetrics")
    clock.t += 100  # 130 s after the rescale: past RESCALE_SETTLE_S
    d = a.scale()
    assert d.guard == "metrics" and "after a rescale" not in d.reason
    assert (events.events[-1][1].type, events.events[-1][1].reason) == ("Warning", "MetricsUnavailable")
    assert len(realizer.applied) == 1


def test_hold_on_stale_metrics():
    a, src, clock, realizer, events, _ = make({"src": 6}, evaluation_interval_s=30)
    src.observation = o(t=905.0)
    d = a.scale()
    assert d.hold and d.reason == "hold: metrics stale for 95s (> 60s)"
    assert not realizer.applied
    assert events.events[-1][1].type == "Warning"


def test_stale_metrics_never_count_towards_a_scale_down():
    a, src, clock, realizer, *_ = make({"src": 2}, scale_down_delay_s=600)
    src.observation = o(t=1000.0)
    assert a.scale().guard == "scale_down_delay"
    clock.t = 1400.0
    src.observation = o(t=1000.0)  # stale
    assert a.scale().guard == "metrics"
    clock.t = 1700.0
    src.observation = o(t=1700.0)
    d = a.scale()
    assert d.hold and "wanted for 0s of 600s" in d.reason


def test_bounds_clamp_to_min_max_and_stage_max():
    a, src, *_ = make({"src": 100}, max_parallelism=32)
    src.observation = o(maxp=12)
    d = a.scale()
    assert d.targets == {"src": 12} and "clamped 100→12" in d.reason
    a, src, *_ = make({"src": 1}, min_parallelism=3, scale_down_delay_s=0)
    src.observation = o()
    assert a.scale().targets == {"src": 3}


def test_a_job_the_bounds_leave_short_of_its_load_holds_at_bounds_with_one_warning():
    a, src, clock, realizer, events, _ = make({"src": 4})
    a.policy.at_bounds = True
    src.observation = o()
    d = a.scale()
    assert d.hold and d.guard == "bounds" and d.targets == {"src": 4} and not realizer.applied
    assert (events.events[-1][1].type, events.events[-1][1].reason) == ("Warning", "AtBounds")
    clock.t, src.observation = 1030.0, o(t=1030.0)
    n = len(events.events)
    assert a.scale().guard == "bounds" and len(events.events) == n  # said once, not every evaluation
    a.policy.at_bounds = False
    clock.t, src.observation = 1060.0, o(t=1060.0)
    assert a.scale().action == "none"


def test_step_limits():
    a, src, *_ = make({"src": 20}, scale_up_max_step=3)
    src.observation = o()
    assert a.scale().targets == {"src": 7}
    a, src, *_ = make({"src": 1}, scale_down_max_step=2, scale_down_delay_s=0)
    src.observation = o(p=10)
    assert a.scale().targets == {"src": 8}


def test_stabilization_window_blocks_a_second_rescale():
    a, src, clock, realizer, *_ = make({"src": 6})
    src.observation = o()
    assert a.scale().action == "scale"
    a.policy.targets = {"src": 8}
    clock.t = 1120.0
    src.observation = o(p=6, t=1120.0)
    d = a.scale()
    assert d.hold and d.guard == "stabilization" and "120s ago (300s window)" in d.reason
    clock.t = 1300.0
    src.observation = o(p=6, t=1300.0)
    assert a.scale().action == "scale"
    assert len(realizer.applied) == 2


def _rescaled_then_wanting(targets, follow_up_s, t, **cfg):
    """Rescaled to 6 at 1000 s; at t the policy wants `targets` and asks for a follow-up after follow_up_s."""
    a, src, clock, realizer, *_ = make({"src": 6}, **cfg)
    src.observation = o()
    assert a.scale().action == "scale"
    a.policy.targets, a.policy.follow_up_after_s = targets, follow_up_s
    clock.t = t
    src.observation = o(p=6, t=t)
    return a, src, clock, realizer


def test_an_urgent_scale_out_follows_the_last_rescale_before_the_window_ends():
    a, src, clock, realizer = _rescaled_then_wanting({"src": 8}, 90.0, 1060.0)
    d = a.scale()
    assert d.hold and d.guard == "stabilization" and "(90s window)" in d.reason, "sooner than the follow-up"
    clock.t = 1090.0
    src.observation = o(p=6, t=1090.0)
    assert a.scale().action == "scale" and realizer.applied[-1].targets == {"src": 8}


def test_follow_up_never_shortens_the_window_for_a_scale_down():
    a, _, _, realizer = _rescaled_then_wanting({"src": 4}, 30.0, 1120.0, scale_down_delay_s=0)
    d = a.scale()
    assert d.hold and d.guard == "stabilization" and "(300s window)" in d.reason and len(realizer.applied) == 1


def test_scale_down_delay():
    a, src, clock, realizer, *_ = make({"src": 2}, scale_down_delay_s=600, stabilization_window_s=0)
    for t in (1000.0, 1120.0, 1590.0):
        clock.t = t
        src.observation = o(t=t)
        d = a.scale()
        assert d.hold and d.guard == "scale_down_delay"
    assert "wanted for 590s of 600s delay" in d.reason
    clock.t = 1600.0
    src.observation = o(t=1600.0)
    assert a.scale().action == "scale" and realizer.applied[-1].targets == {"src": 2}


def test_scale_down_delay_restarts_when_the_want_is_interrupted():
    a, src, clock, *_ = make({"src": 2}, scale_down_delay_s=600, stabilization_window_s=0)
    src.observation = o(t=1000.0)
    a.scale()
    a.policy.targets = {"src": 4}
    clock.t = 1300.0
    src.observation = o(t=1300.0)
    assert a.scale().action == "none"
    a.policy.targets = {"src": 2}
    clock.t = 1700.0
    src.observation = o(t=1700.0)
    d = a.scale()
    assert d.hold and "wanted for 0s" in d.reason


def test_no_scale_down_while_a_backlog_is_caught_up():
    a, src, clock, realizer, *_ = make({"src": 2}, scale_down_delay_s=0, stabilization_window_s=0)
    src.observation = o(backlog=50_000)  # 50 s of input at 1k/s > 2.5 s tolerance
    d = a.scale()
    assert d.hold and d.guard == "backlog" and "backlog of 50.0k records (50s of input)" in d.reason
    src.observation = o(backlog=100)
    assert a.scale().action == "scale"


def test_scale_up_is_allowed_while_catching_up():
    a, src, *_ = make({"src": 8})
    src.observation = o(backlog=50_000)
    assert a.scale().action == "scale"


def test_max_rescales_per_hour():
    a, src, clock, realizer, *_ = make({"src": 5}, stabilization_window_s=0, max_rescales_per_hour=2)
    for i, t in enumerate((1000.0, 1100.0)):
        a.policy.targets = {"src": 5 + i}
        clock.t = t
        src.observation = o(p=4 + i, t=t)
        assert a.scale().action == "scale"
    a.policy.targets = {"src": 9}
    clock.t = 1200.0
    src.observation = o(p=6, t=1200.0)
    d = a.scale()
    assert d.hold and d.guard == "rate_limit" and "2 rescales in the last hour (max 2)" in d.reason
    clock.t = 4601.0  # the first left the hour
    src.observation = o(p=6, t=4601.0)
    assert a.scale().action == "scale"


def test_advisor_mode_decides_but_never_realizes():
    a, src, clock, realizer, events, store = make({"src": 6}, mode="advisor")
    src.observation = o()
    d = a.scale()
    assert d.action == "scale" and d.advisory and d.reason.startswith("advisor: would ")
    assert not realizer.applied
    assert events.events[-1][1].reason == "RescaleAdvised"
    assert store.load("j")["last_rescale_at"] is None


def test_ineffective_scale_up_is_detected_and_blocks_further_scale_ups():
    a, src, clock, realizer, events, _ = make({"src": 8}, stabilization_window_s=300)
    src.observation = obs(stage("src", p=4, rate=2000, proc=1000, busy=1.0), t=1000.0)  # true rate 1000
    assert a.scale().action == "scale"
    a.policy.targets = {"src": 16}
    clock.t = 1330.0  # after stabilization: doubled, but the true rate only went to 1050 (< 10 % of the +1000)
    src.observation = obs(stage("src", p=8, rate=2000, proc=1050, busy=1.0), t=1330.0)
    d = a.scale()
    assert d.hold and d.guard == "ineffective_scale_up" and "did not raise its true processing rate" in d.reason
    assert len(realizer.applied) == 1


def test_effective_scale_up_is_not_blocked():
    a, src, clock, realizer, *_ = make({"src": 8}, stabilization_window_s=300)
    src.observation = obs(stage("src", p=4, rate=2000, proc=1000, busy=1.0), t=1000.0)
    a.scale()
    a.policy.targets = {"src": 16}
    clock.t = 1330.0
    src.observation = obs(stage("src", p=8, rate=2500, proc=1900, busy=1.0), t=1330.0)
    assert a.scale().action == "scale"


def test_realize_failure_is_a_hold_with_a_warning():
    class Broken:
        def realize(self, job, decision):
            raise RuntimeError("nimbus unreachable")

    a, src, clock, realizer, events, store = make({"src": 6})
    a.realizer = Broken()
    src.observation = o()
    d = a.scale()
    assert d.hold and "nimbus unreachable" in d.reason
    assert events.events[-1][1].reason == "RescaleFailed"
    assert store.load("j")["last_rescale_at"] is None


def test_state_survives_a_restart_through_the_state_store():
    a, src, clock, realizer, events, store = make({"src": 6})
    src.observation = o()
    a.scale()
    b = JobAutoscaler("j", a.config, metrics=src, realizer=realizer, store=store, events=events, clock=clock,
                      policy=FixedPolicy({"src": 8}))
    clock.t = 1100.0
    src.observation = o(p=6, t=1100.0)
    assert b.scale().guard == "stabilization"


def test_policy_config_defaults_and_validation():
    c = PolicyConfig()
    assert (c.algorithm, c.mode, c.latency_target_s, c.target_utilization) == ("elastream", "auto", 5.0, 0.7)
    assert c.effective_stale_after_s == 60.0 and c.effective_detector == "rate"
    assert PolicyConfig(algorithm="mestream").effective_detector == "regression"
    with pytest.raises(ValueError):
        PolicyConfig(min_parallelism=10, max_parallelism=4)
    with pytest.raises(ValueError):
        PolicyConfig(algorithm="magic")


def test_a_stall_the_realizer_measured_reaches_the_policy_and_survives_a_restart():
    a, src, clock, realizer, events, store = make({"src": 6})
    seen = []
    a.policy.propose = lambda ctx: seen.append(ctx.rescale_stall_s) or Proposal({"src": 6}, "x", {})
    realizer.realize = lambda job, d: 14.0  # a Storm rebalance: the engine measured its earlier stalls
    src.observation = o()
    a.scale()
    assert seen == [None] and a.state.rescale_stall_s == 14.0
    b = JobAutoscaler("j", a.config, metrics=src, realizer=realizer, store=store, events=events, clock=clock,
                      policy=a.policy)
    clock.advance(400)
    src.observation = o(p=6, t=1400.0)
    b.evaluate(src.observation)
    assert seen[-1] == 14.0
