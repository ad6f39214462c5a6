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
