"""ETW/WTN (elasticity.placement.traffic): pure, with plain data."""
import random

import pytest

from elasticity.placement.traffic import TrafficPlacer, cut_rate, undirected


def test_heavy_pairs_share_a_worker_and_the_light_link_is_the_only_cut():
    loads = dict.fromkeys("abcd", 1.0)
    rates = {("a", "b"): 100.0, ("c", "d"): 90.0, ("b", "c"): 5.0}
    plan = TrafficPlacer(workers=2, balance=0.0).plan(loads, rates, {"n1": 2, "n2": 2})
    assert plan.worker_of["a"] == plan.worker_of["b"] != plan.worker_of["c"] == plan.worker_of["d"]
    assert cut_rate(rates, plan.worker_of) == 5.0


def test_both_directions_of_a_pair_add_up():
    assert undirected({("a", "b"): 2.0, ("b", "a"): 3.0, ("a", "a"): 9.0, ("c", "d"): 0.0}) == {("a", "b"): 5.0}


def test_no_worker_goes_over_the_balance_cap():
    loads = {f"e{i}": 1.0 + (i % 3) for i in range(12)}
    rates = {(f"e{i}", f"e{i + 1}"): 50.0 for i in range(11)}
    plan = TrafficPlacer(workers=3, balance=0.2).plan(loads, rates, {"n1": 3, "n2": 3})
    cap = sum(loads.values()) / 3 * 1.2
    for members in plan.workers().values():
        assert sum(loads[e] for e in members) <= cap + 1e-9


def test_every_worker_gets_an_executor_even_when_traffic_would_pack_them_into_one():
    loads = dict.fromkeys(range(5), 0.0)  # no loads measured: counts are balanced, so nothing is crowded
    rates = {(0, i): 100.0 for i in range(1, 5)}
    plan = TrafficPlacer(workers=4, balance=10.0).plan(loads, rates, {"n1": 4})
    assert sorted(plan.workers()) == [0, 1, 2, 3]


def test_workers_that_talk_share_a_node_within_its_slots_and_capacity():
    loads = dict.fromkeys("abcdef", 1.0)
    rates = {("a", "b"): 100.0, ("c", "d"): 100.0, ("e", "f"): 100.0, ("b", "c"): 50.0, ("d", "e"): 1.0}
    plan = TrafficPlacer(workers=3, balance=0.0).plan(loads, rates, {"n1": 2, "n2": 2})
    nodes = [plan.node_of(e) for e in "abcdef"]
    assert nodes[0] == nodes[2] != nodes[4]  # the 50/s worker link is kept inside a node, the 1/s one crosses
    assert max(nodes.count(n) for n in set(nodes)) <= 4  # 2 slots = 2 workers = 4 executors
    capped = TrafficPlacer(workers=3, balance=0.0).plan(loads, rates, {"n1": 2, "n2": 2}, {"n1": 2.0, "n2": 4.0})
    assert sum(loads[e] for e in loads if capped.node_of(e) == "n1") <= 2.0


def test_too_few_slots_and_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="free slots"):
        TrafficPlacer(workers=3).plan(dict.fromkeys("abc", 1.0), {}, {"n1": 2})
    with pytest.raises(ValueError, match="workers"):
        TrafficPlacer(workers=0)
    with pytest.raises(ValueError, match="balance"):
        TrafficPlacer(workers=1, balance=-1)


def _pipeline(rng: random.Random):
    """A random Storm-like pipeline: stages of 1-4 executors, all-to-all traffic between consecutive stages."""
    stages = [[f"s{s}e{i}" for i in range(rng.randint(1, 4))] for s in range(rng.randint(3, 6))]
    loads = {e: rng.uniform(0.1, 1.0) for st in stages for e in st}
    rates = {}
    for up, down in zip(stages, stages[1:]):
        rate = rng.uniform(10, 200)
        for a in up:
            for b in down:
                rates[(a, b)] = rate / (len(up) * len(down))
    return loads, rates


@pytest.mark.parametrize("seed", range(20))
def test_etw_cuts_less_traffic_than_round_robin_on_pipelines(seed):
    rng = random.Random(seed)
    loads, rates = _pipeline(rng)
    workers = rng.randint(2, 4)
    plan = TrafficPlacer(workers=workers).plan(loads, rates, {"n1": 3, "n2": 3})
    round_robin = {e: i % workers for i, e in enumerate(sorted(loads))}  # Storm's even scheduler, by task order
    assert cut_rate(rates, plan.worker_of) <= cut_rate(rates, round_robin) + 1e-9
    assert len(plan.workers()) == min(workers, len(loads))


def test_a_relayout_must_pay_for_its_rebalance():
    from elasticity.placement.traffic import TrafficCut, cut_of, worth_relayout

    rates = {("a", "b"): 100.0, ("b", "c"): 10.0}
    now = cut_of(rates, {"a": 0, "b": 1, "c": 1}, {"a": "n1", "b": "n2", "c": "n2"})
    assert now == TrafficCut(100.0, 100.0) and now.cost == 200.0
    planned = cut_of(rates, {"a": 0, "b": 0, "c": 1}, {"a": "n1", "b": "n1", "c": "n1"})
    assert planned == TrafficCut(10.0, 0.0)
    worth, why = worth_relayout(now, planned)
    assert worth and "100.0 -> 10.0" in why
    assert not worth_relayout(now, TrafficCut(90.0, 90.0))[0]  # 10 % less: not worth a rebalance
    assert not worth_relayout(TrafficCut(0.4, 0.4), TrafficCut(0.0, 0.0))[0]  # under a tuple/s saved


def test_greedy_without_refinement_is_the_published_etw():
    rng = random.Random(3)
    loads = {i: rng.uniform(0.5, 1.5) for i in range(12)}
    rates = {(i, i + 1): rng.uniform(1, 100) for i in range(11)}
    refined = TrafficPlacer(workers=3).plan(loads, rates, {"n1": 2, "n2": 2})
    published = TrafficPlacer(workers=3, refine=False).plan(loads, rates, {"n1": 2, "n2": 2})
    assert cut_rate(rates, refined.worker_of) <= cut_rate(rates, published.worker_of)
    assert sorted(published.workers()) == [0, 1, 2]
