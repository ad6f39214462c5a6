"""ETW and WTN (seed 002) on the seed's example shape: a linear topology of stages, replication factor 2."""
import numpy as np

from elasticity.placement.greedy import etw, greedy, wtn
from elasticity.placement.model import Bins, Items, evaluate


def chain(stages: int = 3, replication: int = 2, load: float = 10.0):
    """Executors stage-major (stage s, replica r -> s * replication + r). Consecutive stages talk: replica r to
    replica r of the next stage at a high rate (fields grouping), to the other replicas at a low one. Rates fall
    along the chain (100, 80, ...)."""
    n = stages * replication
    R = np.zeros((n, n))
    for s in range(stages - 1):
        hi, lo = 100.0 - 20.0 * s, 5.0 - s
        for r in range(replication):
            for q in range(replication):
                R[s * replication + r, (s + 1) * replication + q] = hi if r == q else lo
    return Items(np.full((n, 1), load), R)


def test_etw_follows_pairs_by_rate_onto_least_loaded_workers():
    items = chain()  # executors 0,1 | 2,3 | 4,5 ; pairs (0,2)=(1,3)=100, (2,4)=(3,5)=80, cross pairs 5 and 4
    worker_of = etw(items, n_workers=2, worker_capacity=30.0)
    # (0,2) -> least-loaded worker 0; (1,3) -> worker 1 (now least loaded); 4 joins 2 on worker 0 (80 kept vs 4),
    # 5 joins 3 on worker 1
    np.testing.assert_array_equal(worker_of, [0, 1, 0, 1, 0, 1])


def test_etw_respects_worker_capacity():
    items = chain()
    worker_of = etw(items, n_workers=3, worker_capacity=20.0)
    # workers 0 and 1 are full after the first two pairs: 4 and 5 go to the least-loaded worker 2
    np.testing.assert_array_equal(worker_of, [0, 1, 0, 1, 2, 2])


def test_wtn_co_locates_chatty_workers():
    # four workers (one executor each): 0-1 and 2-3 talk a lot, 1-2 a little; two nodes holding two workers each
    R = np.zeros((4, 4))
    R[0, 1], R[2, 3], R[1, 2] = 50.0, 40.0, 1.0
    items = Items(np.full((4, 1), 10.0), R)
    node_of_worker = wtn(items, np.arange(4), Bins.uniform(2, 20.0))
    assert node_of_worker[0] == node_of_worker[1] != node_of_worker[2] == node_of_worker[3]


def test_greedy_cuts_inter_node_traffic_below_round_robin():
    items = chain(stages=4, replication=2)
    bins = Bins.uniform(2, 40.0)
    a = greedy(items, bins, workers_per_node=2)
    round_robin = (np.arange(items.n) % 4) // 2  # round robin over 4 slots, slots 0-1 on node 0, 2-3 on node 1
    mg, mr = evaluate(items, bins, a), evaluate(items, bins, round_robin)
    assert mg.feasible
    assert mg.inter_bin_traffic < mr.inter_bin_traffic
    # the replica chains stay whole: only the low-rate cross edges are cut
    assert mg.inter_bin_traffic == sum(5.0 - s for s in range(3)) * 2
    assert len(a.info["worker_of"]) == items.n


def test_greedy_balances_when_nothing_talks():
    items = Items(np.full((4, 3), 10.0))
    a = greedy(items, Bins.uniform(4, 100.0))
    assert sorted(a.bin_of.tolist()) == [0, 1, 2, 3]  # least-loaded first: one per node


def test_greedy_never_overloads_when_a_fit_exists():
    rng = np.random.default_rng(2)
    R = np.triu(rng.uniform(0, 10, (12, 12)), 1)
    items = Items(rng.uniform(50, 100, (12, 5)), R)
    m = evaluate(items, Bins.uniform(6, 300.0), greedy(items, Bins.uniform(6, 300.0)))
    assert m.feasible
