"""elastream drains a backlog that alone breaks the latency target within elastream_slo_catch_up_s, adding at most
elastream_slo_drain_share × the rate."""
import pytest

from elasticity.config import PolicyConfig
from elasticity.policies.base import PolicyContext
from elasticity.policies.elastream import ElastreamPolicy, drain_rate
from elasticity.simulation.families import FAMILIES
from elasticity.simulation.runner import run
from tests.unit.elasticity.helpers import obs, stage


def test_the_drain_is_fast_only_for_a_backlog_worth_more_than_the_latency_target():
    cfg = PolicyConfig(latency_target_s=5.0, catch_up_duration_s=300.0, elastream_slo_catch_up_s=60.0)
    assert drain_rate(4_000.0, 1000.0, cfg) == pytest.approx(4_000.0 / 300)  # 4 s of input: within the target
    assert drain_rate(6_000.0, 1000.0, cfg) == pytest.approx(100.0)  # 6 s: every second it lasts is a violation
    assert drain_rate(None, 1000.0, cfg) == 0.0
    assert drain_rate(6_000.0, 0.0, cfg) == pytest.approx(20.0)
    assert drain_rate(6_000.0, 1000.0, cfg.model_copy(update={"elastream_slo_catch_up_s": 900.0})) == 20.0


def test_a_crowds_queue_drains_at_most_at_the_drain_share_of_the_rate():
    cfg = PolicyConfig(latency_target_s=5.0, catch_up_duration_s=300.0, elastream_slo_catch_up_s=30.0,
                       elastream_slo_drain_share=0.5)
    assert drain_rate(12_000.0, 1000.0, cfg) == pytest.approx(400.0)  # 12 s of input: within 30 s
    # 100 s of input: within 30 s would be 3.3 × the rate; half the rate instead (200 s to drain) ...
    assert drain_rate(100_000.0, 1000.0, cfg) == pytest.approx(500.0)
    # ... never slower than the usual catch-up duration (300 s)
    slow = cfg.model_copy(update={"elastream_slo_drain_share": 0.1})
    assert drain_rate(100_000.0, 1000.0, slow) == pytest.approx(100_000.0 / 300)


@pytest.mark.parametrize("slo_catch_up, lead, expected", [(60.0, 0.0, 13), (300.0, 0.0, 12), (60.0, 30.0, 15)])
def test_a_surge_scales_out_enough_to_drain_its_backlog_quickly(slo_catch_up, lead, expected):
    # 1,500 → 4,000 records/s on 6 instances of 400/s: a 50k backlog (12.5 s of input) after 30 s
    cfg = PolicyConfig(elastream_slo_catch_up_s=slo_catch_up, elastream_queue_lead_s=lead)
    o = obs(stage("src", p=6, rate=4000.0, proc=2400.0, busy=1.0, backlog=50_000.0, maxp=360), t=30.0)
    prop = ElastreamPolicy().propose(PolicyContext(o, [o], cfg, 30.0, {}))
    # planned: 4,000/0.95 + the queue/catch-up, over 400/s per instance, aligned to 360 key groups; the queue is
    # 50,000 now, plus its growth (4,000 − 2,400/s) for the lead: 98,000 with a 30 s lead
    assert prop.targets["src"] == expected
    assert "scale out src 6→" in prop.reason


def _evaluate(pol, cfg, mem, t, backlog, rescaled_at=None, p=6, rate=2000.0):
    o = obs(stage("src", p=p, rate=rate, busy=rate / (400.0 * p), backlog=backlog, maxp=360), t=t)
    return pol.propose(PolicyContext(o, [o], cfg, t, mem, last_rescale_at=rescaled_at))


def _surge_after_a_rescale(backlog_after: float) -> tuple[int, dict]:
    """Rescaled at 30 s, the backlog at 60 s, then a surge to 2,600/s at 120 s: the scale-out it gets."""
    cfg, pol, mem = PolicyConfig(), ElastreamPolicy(), {}
    _evaluate(pol, cfg, mem, 30.0, backlog=0.0)
    _evaluate(pol, cfg, mem, 60.0, backlog=backlog_after, rescaled_at=30.0)
    _evaluate(pol, cfg, mem, 90.0, backlog=0.0, rescaled_at=30.0)
    return _evaluate(pol, cfg, mem, 120.0, backlog=0.0, rescaled_at=30.0, rate=2600.0).targets["src"], mem


def test_a_rescale_that_stalls_the_job_is_measured_and_planned_for():
    stalled, mem = _surge_after_a_rescale(16_000.0)  # 8 s of input: the rescale stalled the job
    assert mem["pause_s"] == 8.0
    smooth, mem0 = _surge_after_a_rescale(0.0)
    assert mem0["pause_s"] == 0.0
    # the scale-out also drains the next rescale's stall within elastream_slo_catch_up_s
    assert stalled > smooth


def test_a_surges_own_queue_is_not_taken_for_a_stall():
    # the scale-out at 30 s was proposed with 8 s of input queued (a surge, half-seen); the queue grows on across it
    cfg, pol, mem = PolicyConfig(), ElastreamPolicy(), {}
    _evaluate(pol, cfg, mem, 30.0, backlog=16_000.0)
    _evaluate(pol, cfg, mem, 60.0, backlog=40_000.0, rescaled_at=30.0)
    assert mem.get("pause_s") is None  # not a 12-s stall: nothing measured
    # a later rescale from a caught-up job is measured as before
    _evaluate(pol, cfg, mem, 90.0, backlog=0.0, rescaled_at=30.0)
    _evaluate(pol, cfg, mem, 120.0, backlog=16_000.0, rescaled_at=90.0)
    assert mem["pause_s"] == 8.0


def test_a_crowds_onset_across_a_caught_up_rescale_is_not_taken_for_a_stall():
    # a scale-out at 30 s from a caught-up job; by 60 s the load has risen from 2,000 to 2,600/s (a crowd's onset)
    # and queued 16,000: 18,000 is what the rise alone brings in over the 30 s — no stall; 6,000 more would be 2.3 s
    cfg, pol, mem = PolicyConfig(), ElastreamPolicy(), {}
    _evaluate(pol, cfg, mem, 30.0, backlog=0.0)
    _evaluate(pol, cfg, mem, 60.0, backlog=16_000.0, rescaled_at=30.0, rate=2600.0)
    assert mem["pause_s"] == 0.0  # was 16,000 / 2,600 = 6.2 s, planned for in every later plan
    cfg, pol, mem = PolicyConfig(), ElastreamPolicy(), {}
    _evaluate(pol, cfg, mem, 30.0, backlog=0.0)
    _evaluate(pol, cfg, mem, 60.0, backlog=24_000.0, rescaled_at=30.0, rate=2600.0)
    assert mem["pause_s"] == pytest.approx(6_000.0 / 2600.0)


def test_a_short_pause_is_not_planned_for():
    cfg = PolicyConfig()
    pol, mem = ElastreamPolicy(), {}
    _evaluate(pol, cfg, mem, 30.0, backlog=0.0)
    _evaluate(pol, cfg, mem, 60.0, backlog=2_000.0, rescaled_at=30.0)  # 1 s of input: Spark-like
    assert mem["pause_s"] == 1.0
    o = obs(stage("src", p=6, rate=2000.0, busy=0.8, maxp=360), t=90.0)
    assert ElastreamPolicy._stalling_pause(PolicyContext(o, [], cfg, 90.0, mem, last_rescale_at=30.0)) == 0.0


def test_the_engines_measured_stall_sets_the_pause_before_any_backlog_is_seen():
    from elasticity.config import PolicyConfig
    from elasticity.policies.base import PolicyContext
    from elasticity.policies.elastream import ElastreamPolicy
    from tests.unit.elasticity.helpers import obs, stage

    cfg = PolicyConfig(latency_target_s=5.0)
    ctx = PolicyContext(observation=obs(stage("src")), history=[], config=cfg, now=0.0, rescale_stall_s=20.0)
    assert ElastreamPolicy._stalling_pause(ctx) == 20.0
    short = PolicyContext(observation=obs(stage("src")), history=[], config=cfg, now=0.0, rescale_stall_s=1.0)
    assert ElastreamPolicy._stalling_pause(short) == 0.0  # well under the latency target: no stalling rescale


def _overloaded(pol, cfg, mem, t, backlog, rescaled_at):
    # 4,000 records/s on 6 instances of 400/s, running flat out with a queue
    o = obs(stage("src", p=6, rate=4000.0, proc=2400.0, busy=1.0, backlog=backlog, maxp=360), t=t)
    return pol.propose(PolicyContext(o, [o], cfg, t, mem, last_rescale_at=rescaled_at))


def test_a_queue_that_keeps_growing_after_a_rescale_asks_for_an_early_follow_up():
    cfg, pol, mem = PolicyConfig(latency_target_s=5.0, elastream_follow_up_s=90.0), ElastreamPolicy(), {}
    _overloaded(pol, cfg, mem, 30.0, backlog=20_000.0, rescaled_at=0.0)
    grew = _overloaded(pol, cfg, mem, 60.0, backlog=40_000.0, rescaled_at=0.0)  # 10 s of input, and growing
    assert grew.follow_up_after_s == 90.0 and "urgent: the queue the last rescale left grows" in grew.reason
    shrank = _overloaded(pol, cfg, mem, 90.0, backlog=30_000.0, rescaled_at=0.0)
    assert shrank.follow_up_after_s is None, "a queue that drains waits out the stabilization window"


def test_a_scale_in_the_load_outran_is_followed_up_one_evaluation_after_it():
    # step-down-up-104 at loads x 0.2: a scale-in 30 s before the step back up; the scale-out then waited 90 s
    cfg, pol, mem = PolicyConfig(latency_target_s=5.0, elastream_follow_up_s=90.0), ElastreamPolicy(), {}
    o = obs(stage("src", p=7, rate=2000.0, busy=0.5, maxp=360), t=0.0)
    pol.propose(PolicyContext(o, [o], cfg, 0.0, mem))  # 7 instances before the scale-in realized at 10 s
    _overloaded(pol, cfg, mem, 30.0, backlog=20_000.0, rescaled_at=10.0)
    grew = _overloaded(pol, cfg, mem, 60.0, backlog=40_000.0, rescaled_at=10.0)
    assert grew.follow_up_after_s == cfg.evaluation_interval_s == 30.0


def test_no_follow_up_without_a_rescale_or_when_switched_off():
    for cfg, rescaled_at in ((PolicyConfig(), None), (PolicyConfig(elastream_follow_up_s=0.0), 0.0)):
        pol, mem = ElastreamPolicy(), {}
        _overloaded(pol, cfg, mem, 30.0, backlog=20_000.0, rescaled_at=rescaled_at)
        assert _overloaded(pol, cfg, mem, 60.0, backlog=40_000.0, rescaled_at=rescaled_at).follow_up_after_s is None


def test_the_instances_a_step_back_up_added_to_drain_its_queue_go_once_it_has_drained():
    # step-down-up-1 (a tuning seed): the step back up queues 11k records; the scale-out adds instances to drain
    # them in 30 s, and keeps only what the load asks for once they are gone and the load has held for
    # elastream_min_saving_age_s — not the whole scale-out's hold (elastream_scale_out_hold_s)
    cfg = PolicyConfig()
    res = run(FAMILIES["step-down-up"](1), "elastream", cfg, keep_decisions=True)
    scales = [d for d in res.decisions if d.action == "scale"]
    drained = [i for i, d in enumerate(scales) if "the queue the scale-out drained is gone" in d.reason]
    assert len(drained) == 1, [d.reason for d in scales]
    out, release = scales[drained[0] - 1], scales[drained[0]]
    assert sum(out.targets.values()) > sum(out.current.values()) and "backlog" in out.reason  # the step back up
    assert cfg.elastream_min_saving_age_s <= release.timestamp - out.timestamp < cfg.elastream_scale_out_hold_s
    saved = sum(release.current.values()) - sum(release.targets.values())
    assert saved >= cfg.elastream_min_saving_floor * sum(release.current.values())
    tl = res.timeline  # and what is left carries the load: no latency over the target after the release
    assert not (tl.latency_p99[tl.t > release.timestamp + 60] > cfg.latency_target_s).any()


def test_the_drain_release_holds_when_the_scrape_is_older_than_the_evaluation():
    # in the operator an observation carries Prometheus's sample time, seconds before the evaluation's clock, and the
    # rescale is stamped with the clock's (last_rescale_at): the release must match the scale-out by that time
    class LaggingScrape:
        def __init__(self, job):
            self.job = job

        def observe(self, name):
            o = self.job.observe(name)
            o.timestamp -= 7.0
            return o

    result = run(FAMILIES["step-down-up"](1), "elastream", keep_decisions=True, metrics=LaggingScrape)
    reasons = [d.reason for d in result.decisions if d.action == "scale"]
    assert sum("the queue the scale-out drained is gone" in r for r in reasons) == 1, reasons
