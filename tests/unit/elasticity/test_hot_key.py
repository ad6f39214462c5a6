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


@pytest.mark.parametrize("hot, p", [(0.6, 2), (0.3, 4), (0.5, 3), (0.08, 10), (0.0, 4)])
def test_the_hot_keys_share_is_read_back_from_the_busiest_instance(hot, p):
    busiest = hot + (1.0 - hot) / p  # the hot key and an even share of the other keys
    mean = 0.9 / (busiest * p)  # the busiest instance 90 % busy
    assert hot_key_share(mean, busiest * p * mean, p) == pytest.approx(hot)


def test_no_share_is_read_where_the_busy_fractions_cannot_tell_one():
    assert hot_key_share(0.6, 0.9, 1) is None  # one instance: its work is all of it
    assert hot_key_share(0.05, 0.1, 4) is None  # too little work to tell
    assert hot_key_share(0.6, None, 4) is None  # the engine reports no maximum (Spark's batches)
    assert hot_key_share(0.6, float("nan"), 4) is None and hot_key_share(float("inf"), 0.9, 4) is None
    assert hot_key_share(0.6, 0.5, 4) == 0.0  # a maximum under the mean is noise: an even spread
    # a 30 % key on 2 instances puts 1.3 × an even share on the busiest: as much as a few keys hashed unevenly
    assert hot_key_share(0.6, 0.65 * 2 * 0.6, 2) == 0.0


def test_a_saturated_hot_key_is_read_however_idle_the_mean():
    # 70 % of the work on one of 8 instances: saturated, it caps the stage at 1.2 instances' worth — a mean of 15 %
    mean = (1 / (0.7 + 0.3 / 8)) / 8
    assert hot_key_share(mean, 1.0, 8) == pytest.approx(0.7)
    assert hot_key_share(mean, 1.3, 8) == pytest.approx(0.7)  # Storm's capacity past 1 reads as saturated


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
    # with the groups unknown, 1/3 against an even 1/4 is within what a few keys hashed unevenly give
    assert hot_key_share(mean, mean * 4 / 3, 4) == 0.0
    # on 10 instances a small share is still a hot key: 8 % of the work puts 1.7 × an even share on its instance
    assert hot_key_share(0.5, 0.5 * 10 * (0.08 + 0.92 / 10), 10) == pytest.approx(0.08)


def test_a_load_no_parallelism_carries_asks_for_the_plateau_not_the_bound():
    # 0.7 of the work on one key: 6 instances do 1.33 instances' worth, 3 already 1.25 (over 90 % of it)
    assert plateau_parallelism(None, 0.7, 1, 6) == 3
    assert least_parallelism(1000.0, 125.0, None, 1, 6, hot_share=0.7, plateau=True) == 3
    assert least_parallelism(1000.0, 125.0, None, 1, 6, plateau=True) == 6  # no hot key: the bound, as before
    assert least_parallelism(200.0, 125.0, None, 1, 6, hot_share=0.3) == 3  # reachable: the least that carries
    # a scale-in (hi = the current parallelism) that nothing carries keeps hi: never into the overload
    assert least_parallelism(1000.0, 125.0, None, 1, 6, hot_share=0.7) == 6


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
    # 55 sentences/s = 247.5 words/s, 30 % of them one word: on 3 count executors (6 tasks, 2 each) the hot one would
    # carry 132/s of its 125 and saturates, while the mean is 62 %. Instances added split the other words, a task at a
    # time: 3 to 5 executors keep 2 tasks on the hot one (125 / (0.3 + 0.7 / 3) = 234/s), 6 carry 300/s
    prop = _word_count(hot=0.3, count_p=3, sentences=55.0)
    assert prop.targets["count"] == 6, prop.reason
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
    # (62 %) says count has room, and the queue is blamed on the stages before it
    prop = _word_count(hot=0.3, count_p=3, sentences=55.0, busiest_reported=False)
    assert prop.targets["count"] == 3, prop.reason
    assert "hot key" not in prop.reason


def test_a_hot_stage_is_never_scaled_in_to_what_carries_less():
    # 70 % of 160 words/s on one word, count at 6 of 6: 167/s at most, 96 % busy on its hot executor. A scale-in
    # plans at the ceiling minus the hysteresis, which nothing carries: it keeps 6 (not the 3 of a scale-out's plateau)
    for steps in range(6, 16, 3):
        prop = _word_count(hot=0.7, count_p=6, sentences=160.0 / 4.5, steps=steps)
        assert prop.targets["count"] == 6, prop.reason


def test_a_hot_key_at_its_plateau_is_no_bound_while_the_bound_would_carry_the_load():
    # count at 3 of 6 (the plateau for a 70 % key), hot for a queue: the bound carries 167/s, so 100/s expected is
    # not "cannot carry at any parallelism"; 200/s is
    from types import SimpleNamespace

    from elasticity.policies.capacity import CapacityEstimate

    o = obs(stage("count", p=3, maxp=6, busy_fraction_max=0.9))
    for rate, held in ((100.0, False), (200.0, True)):
        look = SimpleNamespace(caps={"count": CapacityEstimate(125.0, "ds2", hot_share=0.7)}, u_up=0.975, h_up=60.0,
                               up={"count": SimpleNamespace(target_input_rate=rate)})
        look.capacity_now = lambda s, look=look: look.caps[s.name].carried(int(s.parallelism), s.max_parallelism)
        reason = ElastreamPolicy._at_bounds(o, look, STORM, ["count"])
        assert bool(reason) == held, reason
        assert not held or reason.endswith("(the job falls behind until the load falls or the hot key cools)")


def test_the_bounds_reason_says_what_would_end_it():
    from elasticity.policies.base import at_bounds_reason

    assert at_bounds_reason(["x"]).endswith("until the load falls or a max rises)")
    assert at_bounds_reason(["x"], max_bound=False, hot_key=True).endswith("until the load falls or the hot key cools)")
    assert at_bounds_reason(["x"], hot_key=True).endswith("until the load falls, a max rises or the hot key cools)")


def test_a_scale_in_of_a_hot_stage_says_what_the_key_leaves_it():
    # 30 % of 120 words/s on one word, count at 6 (its hot executor 40 % busy): 2 executors carry 192/s with the key's
    # share (not 250/s), and the reason says so
    prop = None
    for steps in range(8, 30, 2):
        prop = _word_count(hot=0.3, count_p=6, sentences=120.0 / 4.5, steps=steps)
        if prop.targets["count"] < 6:
            break
    assert prop.targets["count"] < 6, prop.reason
    assert "count 6→" in prop.reason and "(a hot key brings 30% of its work: " in prop.reason, prop.reason
