"""elastream reads a step up seen part-way from the queue it left (item 18): the scrape averages the step with the
level before it, and the queue's growth tells how much of the window the step filled."""
import pytest

from elasticity.config import PolicyConfig
from elasticity.policies.base import PolicyContext
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


def test_a_stages_upstream_is_its_ancestors_within_the_job():
    o = obs(stage("a"), stage("b", upstream=("a", "other-jobs-topic")), stage("c"), stage("d", upstream=("b", "c")))
    assert o.upstream_of("d") == {"a", "b", "c", "d"}
    assert o.upstream_of("b") == {"a", "b"}  # a topic outside the job is no stage of it
    assert o.upstream_of("a") == {"a"}
