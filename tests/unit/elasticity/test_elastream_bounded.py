"""elastream's item 20 (issue 14): no stage is planned for more than the stages after it pass at their bounds — a
source upstream of a stage at its maximum parallelism passes on no more than that stage carries, and instances beyond
it only move the queue downstream."""
from elasticity.config import PolicyConfig
from elasticity.policies.base import PolicyContext
from elasticity.policies.elastream import ElastreamPolicy
from tests.unit.elasticity.helpers import obs, stage


def _propose(enrich_max: int):
    # 4,000 records/s into a source of 4 × 400/s, then `enrich` (8 × 150/s = 1,200/s), both flat out with queues
    cfg, pol, mem = PolicyConfig(), ElastreamPolicy(), {}
    prop = None
    for i in range(8):
        t = 30.0 * (i + 1)
        src = stage("src", p=4, rate=4000.0, proc=1600.0, busy=1.0, backlog=2400.0 * t, maxp=360)
        enrich = stage("enrich", p=8, rate=1600.0, proc=1200.0, busy=1.0, backlog=400.0 * t, maxp=enrich_max,
                       upstream=("src",))
        o = obs(src, enrich, t=t, p99=60.0)
        prop = pol.propose(PolicyContext(o, [o], cfg, t, mem))
    return prop


def test_a_stage_upstream_of_one_at_its_bound_is_not_scaled_past_what_that_one_carries():
    bounded = _propose(enrich_max=8)
    assert bounded.targets == {"src": 4, "enrich": 8}, bounded.reason  # 1,200/s at 95 % needs 4 × 400/s
    free = _propose(enrich_max=360)
    assert free.targets["src"] > 4 and free.targets["enrich"] > 8, free.reason  # unbounded: both scale out


def _propose_three(src_p: int, agg_p: int):
    # 4,000 records/s into src (src_p × 400/s), then `enrich` at its bound (8 × 150/s = 1,200/s) with a queue, then
    # `aggregate` (agg_p × 400/s) fed half of what enrich processes
    cfg, pol, mem = PolicyConfig(), ElastreamPolicy(), {}
    prop = None
    for i in range(8):
        t = 30.0 * (i + 1)
        src_out = min(4000.0, 400.0 * src_p)
        src = stage("src", p=src_p, rate=4000.0, proc=src_out, busy=src_out / (400.0 * src_p),
                    backlog=(4000.0 - src_out) * t, maxp=360)
        enrich = stage("enrich", p=8, rate=src_out, proc=1200.0, busy=1.0, backlog=(src_out - 1200.0) * t, maxp=8,
                       upstream=("src",), output_rate=600.0)
        agg = stage("aggregate", p=agg_p, rate=600.0, busy=600.0 / (400.0 * agg_p), maxp=360, upstream=("enrich",))
        o = obs(src, enrich, agg, t=t, p99=60.0)
        prop = pol.propose(PolicyContext(o, [o], cfg, t, mem))
    return prop


def test_no_rescale_when_the_stages_around_one_at_its_bound_already_carry_what_it_passes():
    # src passes 2,000/s, more than enrich's 1,200/s; aggregate carries 1,200/s, more than enrich's 600/s out: a
    # scale-out would only move src's queue into enrich and pause the whole job
    held = _propose_three(src_p=5, agg_p=3)
    assert held.targets == {"src": 5, "enrich": 8, "aggregate": 3}, held.reason
    assert "src stays at 5" in held.reason and "aggregate stays at 3" in held.reason, held.reason
    assert held.at_bounds


def test_a_stage_that_passes_less_than_the_bound_carries_still_scales_out():
    short_src = _propose_three(src_p=2, agg_p=3)  # 800/s into an enrich that carries 1,200/s
    assert short_src.targets["src"] > 2 and short_src.targets["enrich"] == 8, short_src.reason
    short_agg = _propose_three(src_p=5, agg_p=1)  # 400/s of aggregate for enrich's 600/s out
    assert short_agg.targets["aggregate"] > 1, short_agg.reason
