"""elastream's surprise headroom (item 24): a load that outran a calm job and broke the latency target, seen in
several episodes within the memory, makes scale-ins plan further under the ceiling."""
from elasticity.config import PolicyConfig
from elasticity.policies.base import PolicyContext
from elasticity.policies.elastream import ElastreamPolicy
from tests.unit.elasticity.helpers import obs, stage

ON = dict(elastream_surprise_headroom=0.07, elastream_surprise_recurrence=3)


def _margins(cfg, p99s, step=30.0) -> list[float]:
    """The margin at each evaluation of a one-stage job (caught up throughout) whose p99 runs through p99s."""
    mem: dict = {}
    out = []
    for i, p99 in enumerate(p99s):
        t = step * (i + 1)
        o = obs(stage("src", p=4, rate=1000.0, busy=0.6), t=t, p99=p99)
        out.append(ElastreamPolicy._surprise_margin(PolicyContext(o, [o], cfg, t, mem), True))
    return out


def _spikes(n: int, gap: int = 40) -> list[float]:
    """n surprises, each a calm job's p99 jumping to 9 s for two evaluations, `gap` evaluations apart."""
    out: list[float] = []
    for _ in range(n):
        out += [1.0] * gap + [9.0, 9.0]
    return out + [1.0] * 4


def test_off_by_default():
    assert set(_margins(PolicyConfig(), _spikes(4))) == {0.0}


def test_the_headroom_comes_once_surprises_recur():
    margins = _margins(PolicyConfig(**ON), _spikes(3))
    third = 3 * 42 - 2  # the evaluation the third spike is first seen at
    assert set(margins[:third]) == {0.0}
    assert margins[third] == 0.07 and margins[-1] == 0.07


def test_a_long_violation_and_spikes_within_a_window_are_one_episode_each():
    cfg = PolicyConfig(**ON)
    assert _margins(cfg, [1.0] * 5 + [9.0] * 200)[-1] == 0.0  # not calm before: once
    assert _margins(cfg, _spikes(6, gap=5))[-1] == 0.0  # 150 s apart: within one 600-s window, then one more
    assert _margins(cfg, _spikes(6, gap=25))[-1] == 0.07  # 750 s apart


def test_surprises_older_than_the_memory_are_forgotten():
    cfg = PolicyConfig(**ON, elastream_surprise_memory_s=3600.0)
    assert _margins(cfg, _spikes(3) + [1.0] * 130)[-1] == 0.0


def test_a_scale_in_after_recurring_surprises_keeps_more_instances():
    def scaled_in(cfg) -> int:
        pol, mem = ElastreamPolicy(), {}
        prop = None
        for i, p99 in enumerate(_spikes(3) + [1.0] * 20):
            t = 30.0 * (i + 1)
            o = obs(stage("src", p=10, rate=1000.0, busy=1000.0 / 4000.0, maxp=360), t=t, p99=p99)
            prop = pol.propose(PolicyContext(o, [o], cfg, t, mem))
        return prop.targets["src"]

    plain, wary = scaled_in(PolicyConfig()), scaled_in(PolicyConfig(**ON))
    assert plain < 10 and plain < wary <= 10
