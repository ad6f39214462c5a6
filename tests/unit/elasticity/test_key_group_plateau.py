"""Over K key groups, p instances carry K / ceil(K/p) instances' worth: 60 instances over 360 groups carry what 64
do. A load no parallelism carries asks for the least parallelism that carries what the bound does, is held AtBounds
there, and the latency the bounds cost does not lower the utilization ceiling."""
from elasticity.config import PolicyConfig
from elasticity.policies.base import PolicyContext
from elasticity.policies.capacity import least_parallelism
from elasticity.policies.elastream import ElastreamPolicy
from tests.unit.elasticity.helpers import obs, stage


def test_a_load_past_the_bound_asks_for_what_carries_as_much_as_the_bound():
    assert least_parallelism(20000.0, 150.0, 360, 1, 64, plateau=True) == 60
    assert least_parallelism(20000.0, 150.0, 360, 45, 64, plateau=True) == 60
    assert least_parallelism(20000.0, 150.0, 360, 62, 64, plateau=True) == 62  # already past it: no lower
    # a scale-in's plan from 64 (hi = the current) carries as much with 60
    assert least_parallelism(20000.0, 150.0, 360, 1, 64) == 60
    # without key groups every instance adds its share: the bound
    assert least_parallelism(20000.0, 150.0, None, 1, 64, plateau=True) == 64
    assert least_parallelism(20000.0, 150.0, 64, 1, 64, plateau=True) == 64


def _past_the_bound(enrich_p: int, steps: int = 8, p99: float = 20.0):
    """source (400/s an instance, 28) → enrich (150/s an instance, 360 key groups, enrich_p) under 10,000 records/s:
    enrich carries 9,000/s at most (60 and 64 instances alike) and runs flat out. Every proposal."""
    cfg = PolicyConfig()
    pol, mem, history, out = ElastreamPolicy(), {}, [], []
    done = min(10000.0, 150.0 * 360 / -(-360 // enrich_p))
    for i in range(steps):
        t = 30.0 * (i + 1)
        o = obs(stage("source", p=28, rate=10000.0, proc=10000.0, busy=10000.0 / (400 * 28), maxp=360),
                stage("enrich", p=enrich_p, rate=10000.0, proc=done, busy=done / (150.0 * enrich_p), maxp=360,
                      upstream=("source",)), t=t, p99=p99)
        history.append(o)
        out.append(pol.propose(PolicyContext(o, history[-10:], cfg, t, mem)))
    return out


def test_a_scale_out_past_the_bound_stops_where_the_key_groups_give_no_more():
    prop = _past_the_bound(enrich_p=45, steps=1)[0]
    assert prop.targets["enrich"] == 60, prop.reason  # not 64: the 4 more would hold no more key groups


def test_a_stage_carrying_what_its_bound_would_is_held_at_the_bounds_and_keeps_its_ceiling():
    props = _past_the_bound(enrich_p=60)
    for prop in props:
        assert prop.targets == {"source": 28, "enrich": 60} and prop.at_bounds, prop.reason
        assert ("enrich at 60 instances (over 360 key groups, as much as its max parallelism 64 carries) cannot "
                "carry") in prop.reason, prop.reason
        # a p99 over the target, caught up: the bounds', not the utilization's (it once fell 0.95 → 0.70 here, and
        # sized the source for more than enrich passes)
        assert prop.inputs["u_max"] == PolicyConfig().elastream_max_utilization, prop.inputs


def test_the_ceiling_still_falls_for_a_latency_miss_below_the_bounds():
    # the same p99 over the target with nothing flat out at its bounds: queueing the ceiling can cure
    cfg, pol, mem, history = PolicyConfig(), ElastreamPolicy(), {}, []
    o = obs(stage("source", p=10, rate=2000.0, proc=2000.0, busy=0.5, maxp=360), t=30.0, p99=20.0)
    prop = pol.propose(PolicyContext(o, [o], cfg, 30.0, mem))
    assert prop.inputs["u_max"] < cfg.elastream_max_utilization, prop.inputs


def test_a_hot_key_below_the_bound_is_named_not_called_a_max():
    # enrich at 60 of 64 over 360 groups with a 10 % key: the bound carries no more, and the key is why
    from types import SimpleNamespace

    from elasticity.policies.capacity import CapacityEstimate

    o = obs(stage("enrich", p=60, maxp=360, busy=0.14, busy_fraction_max=1.0))
    look = SimpleNamespace(caps={"enrich": CapacityEstimate(150.0, "ds2", hot_share=0.1)}, u_up=0.975, h_up=600.0,
                           up={"enrich": SimpleNamespace(target_input_rate=8000.0)})
    look.capacity_now = lambda s: look.caps[s.name].carried(int(s.parallelism), s.max_parallelism)
    reason = ElastreamPolicy._at_bounds(o, look, PolicyConfig(), ["enrich"])
    assert "enrich cannot carry 8.0k/s expected within 600s at any parallelism (a hot key" in reason, reason
    assert reason.endswith("until the load falls or the hot key cools)"), reason


def test_rl_steps_to_the_bound_when_nothing_carries_the_load():
    # rl's weights were trained on "more" = the bound when no parallelism carries the load, not a step of one
    from elasticity.policies.rl import RLPolicy

    cfg = PolicyConfig()
    st = stage("enrich", p=60, rate=20000.0, proc=9000.0, busy=1.0, maxp=360)
    o = obs(st, t=30.0)
    more, less = RLPolicy().steps(st, 150.0, 20000.0, 0.0, PolicyContext(o, [o], cfg, 30.0, {}))
    assert (more, less) == (64, 59)


def _recurring(src_p: int):
    """Me-Stream's recurring bottleneck at the source (test_mestream's history), the source at src_p of 360 groups:
    elastream's regression detector's proposal."""
    hist = [obs(stage("src", p=src_p, rate=1000, busy=0.9, backlog=0, maxp=360),
                stage("map", p=2, rate=1000, busy=0.5, upstream=["src"], maxp=360), t=i * 30.0, lat=y)
            for i, y in enumerate([1.0, 1.02, 0.98, 1.01, 0.99, 1.0, 6.0, 7.0])]
    hist[-1].stages[0].backlog = 6000.0
    ctx = PolicyContext(hist[-1], hist, PolicyConfig(detector="regression"), now=hist[-1].timestamp)
    return ElastreamPolicy._recurring_bottleneck(ctx, {})


def test_the_regression_detectors_step_holds_fewer_key_groups_an_instance():
    assert _recurring(4)[0]["src"] == 5
    assert _recurring(52)[0]["src"] == 60  # 53–59 hold 7 groups an instance, as 52 does
    assert _recurring(60) is None  # 61–64 hold 6, as 60 does: nothing to add


def test_after_a_hold_at_the_bounds_the_ceiling_stays_even_when_no_scrape_reads_flat_out():
    # enrich at 60 of 360 groups, 12,000/s offered, 9,000/s done at a busy fraction read as 85 % (a window that
    # averaged a spike): no stage reads flat out, but each evaluation is held AtBounds, so after the first (which
    # does not know it yet) the latency miss lowers the ceiling no further
    cfg, pol, mem, history, props = PolicyConfig(), ElastreamPolicy(), {}, [], []
    for i in range(8):
        t = 30.0 * (i + 1)
        o = obs(stage("source", p=40, rate=12000.0, proc=12000.0, busy=12000.0 / (400 * 40), maxp=360),
                stage("enrich", p=60, rate=12000.0, proc=9000.0, busy=0.85, maxp=360, upstream=("source",)),
                t=t, p99=20.0)
        history.append(o)
        props.append(pol.propose(PolicyContext(o, history[-10:], cfg, t, mem)))
    assert all(p.at_bounds for p in props), [p.reason for p in props]
    assert {p.inputs["u_max"] for p in props[1:]} == {props[0].inputs["u_max"]}, [p.inputs["u_max"] for p in props]
