"""A hot key: one key brings a share of a stage's work that no parallelism splits (a fields-grouped word count's
most frequent word). Its instance saturates while the mean busy fraction looks idle; elastream reads the share from
the busiest instance (StageMetrics.busy_fraction_max) and plans with it."""
import pytest

from elasticity.config import PolicyConfig
from elasticity.policies.base import PolicyContext
from elasticity.policies.capacity import (effective_parallelism, hot_key_share, least_parallelism,
                                          plateau_parallelism)
from elasticity.policies.elastream import ElastreamPolicy
from tests.unit.elasticity.helpers import obs, stage

STORM = PolicyConfig(latency_target_s=5.0, evaluation_interval_s=20.0, stabilization_window_s=40.0)
PER_EXECUTOR = 125.0  # words/s a count executor carries (8 ms a word)


@pytest.mark.parametrize("hot, p", [(0.3, 2), (0.3, 4), (0.5, 3), (0.0, 4)])
def test_the_hot_keys_share_is_read_back_from_the_busiest_instance(hot, p):
    busiest = hot + (1.0 - hot) / p  # the hot key and an even share of the other keys
    mean = 0.6
    assert hot_key_share(mean, busiest * p * mean, p) == pytest.approx(hot)


def test_no_share_is_read_where_the_busy_fractions_cannot_tell_one():
    assert hot_key_share(0.6, 0.9, 1) is None  # one instance: its work is all of it
    assert hot_key_share(0.05, 0.1, 4) is None  # too little work to tell
    assert hot_key_share(0.6, None, 4) is None  # the engine reports no maximum (Spark, the simulator)
    assert hot_key_share(0.6, 0.5, 4) == 0.0  # a maximum under the mean is noise: an even spread


def test_a_hot_key_caps_what_instances_add():
    # one key brings 30 %: p instances do 1 / (0.3 + 0.7 / p) instances' worth, never more than 1 / 0.3
    assert effective_parallelism(1, None, 0.3) == pytest.approx(1.0)
    assert effective_parallelism(2, None, 0.3) == pytest.approx(1 / 0.65)
    assert effective_parallelism(1000, None, 0.3) < 1 / 0.3
    assert effective_parallelism(4, None, 0.0) == 4.0  # no hot key: as before
    # with key groups: the hot key's instance holds ceil(8/5) = 2 of the 8 groups' share of the rest
    assert effective_parallelism(5, 8, 0.05) == pytest.approx(1 / (0.05 + 0.95 * 2 / 8))
    assert effective_parallelism(5, 8) == pytest.approx(4.0)


def test_key_groups_spread_unevenly_are_no_hot_key():
    # 6 tasks on 4 executors: two hold 2 tasks, so the busiest does 1/3 of the work where the mean is 1/4; the key
    # groups already count that (effective_parallelism 3), and it is no hot key
    mean = 0.6
    assert hot_key_share(mean, mean * 4 / 3, 4, key_groups=6) == 0.0
    assert hot_key_share(mean, mean * 4 / 3, 4) == pytest.approx((1 / 3 - 1 / 4) / (3 / 4))  # unknown groups: it is
    # a hot key on 10 instances can be a small share and still be one: 5 % of the work is half again an even share
    assert hot_key_share(mean, mean * 10 * (0.05 + 0.95 / 10), 10) == pytest.approx(0.05)


def test_a_load_no_parallelism_carries_asks_for_the_plateau_not_the_bound():
    # 0.7 of the work on one key: 6 instances do 1.33 instances' worth, 3 already 1.25 (over 90 % of it)
    assert plateau_parallelism(None, 0.7, 1, 6) == 3
    assert least_parallelism(1000.0, 125.0, None, 1, 6, hot_share=0.7) == 3
    assert least_parallelism(1000.0, 125.0, None, 1, 6) == 6  # no hot key: the bound, as before
    assert least_parallelism(200.0, 125.0, None, 1, 6, hot_share=0.3) == 3  # reachable: the least that carries


def _word_count(hot: float, count_p: int, sentences: float, busiest_reported: bool = True, steps: int = 8):
    """A Storm-like word count under `sentences`/s (4.5 words each): a spout with no busy fraction, split (50
    sentences/s an executor, 2 of them) and count (125 words/s an executor, max 6) whose most frequent word is `hot`
    of its words. The hot executor saturates first and caps what count processes; the spout's queue grows by what
    count cannot take. The proposal after `steps` evaluations 20 s apart."""
    pol, mem, history, prop = ElastreamPolicy(), {}, [], None
    words = 4.5 * sentences
    busiest_share = hot + (1.0 - hot) / count_p
    done = min(words, PER_EXECUTOR / busiest_share)  # words/s count processes: its busiest executor at 100 %
    for i in range(steps):
        t = 20.0 * (i + 1)
        queued = (words - done) / 4.5 * t
        o = obs(stage("spout", p=1, rate=sentences, proc=done / 4.5, busy=0.0, backlog=queued, maxp=1),
                stage("split", p=2, rate=done / 4.5, proc=done / 4.5, busy=done / 4.5 / 100.0, maxp=8,
                      upstream=("spout",), output_rate=done),
                stage("count", p=count_p, rate=done, proc=done, busy=done / (PER_EXECUTOR * count_p), maxp=6,
                      upstream=("split",),
                      busy_fraction_max=done * busiest_share / PER_EXECUTOR if busiest_reported else None),
                t=t, p99=None)
        history.append(o)
        prop = pol.propose(PolicyContext(o, history[-10:], STORM, t, mem))
        if prop.targets != o.parallelism:
            break
    return prop


def test_a_hot_key_is_planned_for_where_the_mean_says_there_is_room():
    # 50 sentences/s = 225 words/s, 30 % of them one word: on 2 count executors the hot one carries 146/s of its
    # 125 and saturates, while the mean is 77 %. Instances added split the other words: 3 carry
    # 125 / (0.3 + 0.7 / 3) = 234/s, 4 carry 263/s; the hot key (68/s) fits one executor
    prop = _word_count(hot=0.3, count_p=2, sentences=50.0)
    assert prop.targets["count"] >= 4, prop.reason
    assert "a hot key: one key brings 30% of its work" in prop.reason, prop.reason


def test_a_hot_key_no_instance_can_take_is_held_at_the_bounds():
    # 70 % of 225 words/s on one word: 158/s for one executor of 125, so no parallelism carries the load; count at 3
    # already does over 90 % of what 6 would. Not "steady", nor a scale-out to the bound that adds nothing
    prop = _word_count(hot=0.7, count_p=3, sentences=50.0)
    assert prop.targets["count"] == 3 and prop.at_bounds, prop.reason
    assert "count cannot carry" in prop.reason and "at any parallelism (a hot key: one key brings 70%" in prop.reason
    assert "until the load falls or the hot key cools" in prop.reason


def test_without_the_busiest_instance_the_hot_key_goes_unseen():
    # what elastream did before busy_fraction_max, and still does for an engine that does not report one: the mean
    # (77 %) says count has room, and the queue is blamed on the stages before it
    prop = _word_count(hot=0.3, count_p=2, sentences=50.0, busiest_reported=False)
    assert prop.targets["count"] < 4, prop.reason
    assert "hot key" not in prop.reason
