"""elastream reads a step up seen part-way from the queue it left (item 18): the scrape averages the step with the
level before it, and the queue's growth tells how much of the window the step filled."""
from types import SimpleNamespace

import pytest

from elasticity.config import PolicyConfig
from elasticity.policies.base import PolicyContext
from elasticity.policies.capacity import CapacityEstimate
from elasticity.policies.elastream import ElastreamPolicy
from tests.unit.elasticity.helpers import obs, stage

PER_INSTANCE = 400.0


def _run(cfg, last_rate, last_backlog, last_proc=None, p=5, steady=1500.0, last_p99=4.5):
    """Eight evaluations at `steady` records/s on p instances of 400/s (p99 1 s), then one whose window average is
    `last_rate` with `last_backlog` queued and a p99 of `last_p99` (target 5 s): the proposal for that one."""
    pol, mem, history = ElastreamPolicy(), {}, []
    prop = None
    for i in range(9):
        t = 30.0 * (i + 1)
        rate, backlog = (steady, 0.0) if i < 8 else (last_rate, last_backlog)
        proc = rate if i < 8 or last_proc is None else last_proc
        o = obs(stage("src", p=p, rate=rate, proc=proc, busy=min(proc / (PER_INSTANCE * p), 1.0), backlog=backlog,
                      maxp=360), t=t, p99=1.0 if i < 8 else last_p99)
        history.append(o)
        prop = pol.propose(PolicyContext(o, history[-10:], cfg, t, mem))
    return prop


ON = PolicyConfig(elastream_onset_backlog_s=1.0)
OFF = PolicyConfig(elastream_onset_backlog_s=0.0)
STORM = PolicyConfig(latency_target_s=5.0, evaluation_interval_s=20.0, stabilization_window_s=40.0)


def test_a_step_seen_part_way_scales_out_for_the_rate_its_queue_implies():
    # 1,500 → ~2,600 records/s twelve seconds before the evaluation: the window's average is 1,715/s and the queue
    # grew by 3,848 (capacity 2,000/s). The step rate that fills both: (2,000·6,450 − 1,500·3,848) / (6,450 − 3,848)
    # ≈ 2,740/s, which needs 2,740 / 0.95 / 400 ≈ 7.2 instances and more for the queue
    prop = _run(ON, 1715.0, 3848.0, last_proc=1587.0)
    assert "scale out src 5→" in prop.reason
    assert prop.targets["src"] >= 8
    # without the onset reading, the average (1,715/s of 2,000) looks steady: the step is seen 30 s later
    assert _run(OFF, 1715.0, 3848.0, last_proc=1587.0).targets["src"] == 5


@pytest.mark.parametrize("rate, backlog, p99", [
    (1715.0, 1000.0, 4.5),  # a queue under a second of input: noise, or a queue that drains by itself
    (1450.0, 3848.0, 4.5),  # a queue with no rise of the rate: the capacity dipped, no step
    (1715.0, 3848.0, 2.0),  # a queue the latency does not feel (p99 within half the target): the next evaluation
])
def test_no_step_is_read_without_a_rise_a_queue_and_the_latency_feeling_it(rate, backlog, p99):
    prop = _run(ON, rate, backlog, last_p99=p99)
    assert prop.targets["src"] == 5, prop.reason


def _storm_step(count_bound: int):
    """A Storm-like word count: a spout with no busy fraction (its work is the source's) whose queue is the source's,
    split (50 sentences/s per executor) and count (125 words/s per executor, 4.5 words a sentence). Seven
    evaluations at 30 sentences/s, then one 20 s later, into a step to 110/s: the spout emitted 48/s and its queue
    grew to 705 records. The proposal for that one."""
    pol, mem, history, prop = ElastreamPolicy(), {}, [], None
    for i in range(8):
        t = 20.0 * (i + 1)
        rate, emitted, backlog = (30.0, 30.0, 0.0) if i < 7 else (110.0, 48.0, 705.0)
        o = obs(stage("spout", p=1, rate=rate, proc=emitted, busy=0.0, backlog=backlog, maxp=1),
                stage("split", p=1, rate=emitted, proc=emitted, busy=emitted / 50.0, maxp=8, upstream=("spout",),
                      output_rate=4.5 * emitted),
                stage("count", p=2, rate=4.5 * emitted, proc=4.5 * emitted, busy=4.5 * emitted / 250.0,
                      maxp=count_bound, upstream=("split",)), t=t, p99=None)
        history.append(o)
        prop = pol.propose(PolicyContext(o, history[-10:], STORM, t, mem))
    return prop


def test_a_spouts_queue_is_read_against_what_it_emitted_not_an_unmeasured_capacity():
    # the spout reports no busy fraction: its "capacity" is its emit rate over a 2 % floor (2,400/s). Read as the
    # rate draining its queue, a growth of 31/s implied a step to ~2.4k/s, and split went to its bound of 8 for it
    prop = _storm_step(count_bound=8)
    assert "scale out split 1→" in prop.reason
    assert prop.targets["split"] <= 4, prop.reason  # 110/s at 50/s an executor, its queue, and the trend's lead
    assert "k/s expected" not in prop.reason.split("split")[1].split(";")[0], prop.reason


def test_a_job_at_its_bounds_says_so_instead_of_steady():
    # count runs at its max parallelism (2: 250 words/s) under 110 sentences/s (495 words/s): nothing to add, and
    # split (2 of 8, 100/s) is kept by item 20. The reason names both, not "steady: planned load within ..."
    pol, mem, history, prop = ElastreamPolicy(), {}, [], None
    for i in range(8):
        t = 20.0 * (i + 1)
        o = obs(stage("spout", p=1, rate=110.0, proc=55.0, busy=0.0, backlog=600.0 * (i + 1), maxp=1),
                stage("split", p=2, rate=55.0, proc=55.0, busy=0.55, maxp=8, upstream=("spout",), output_rate=247.5),
                stage("count", p=2, rate=247.5, proc=247.5, busy=0.99, maxp=2, upstream=("split",)), t=t, p99=None)
        history.append(o)
        prop = pol.propose(PolicyContext(o, history[-10:], STORM, t, mem))
        assert prop.targets == o.parallelism, prop.reason
    assert prop.reason.startswith("at the bounds: ") and prop.at_bounds, prop.reason
    assert "count at its max parallelism 2 cannot carry 495/s" in prop.reason
    assert "split stays at 2" in prop.reason


def test_a_hot_stage_below_every_bound_is_no_job_at_its_bounds():
    # a scale-out that adds nothing for another reason (a queue its capacity drains) is not reported AtBounds
    o = obs(stage("split", p=2, maxp=8), stage("count", p=2, maxp=6, upstream=("split",)))
    look = SimpleNamespace(caps={"split": CapacityEstimate(50.0, "ds2"), "count": CapacityEstimate(125.0, "ds2")})
    assert ElastreamPolicy._at_bounds(o, look, STORM, ["split", "count"]) == ""


def test_a_stages_upstream_is_its_ancestors_within_the_job():
    o = obs(stage("a"), stage("b", upstream=("a", "other-jobs-topic")), stage("c"), stage("d", upstream=("b", "c")))
    assert o.upstream_of("d") == {"a", "b", "c", "d"}
    assert o.upstream_of("b") == {"a", "b"}  # a topic outside the job is no stage of it
    assert o.upstream_of("a") == {"a"}
