"""The `rl` policy: shipped weights, behaviour in the simulator, bounds, scale-free features, reproducible training."""
from __future__ import annotations

import json

import numpy as np
import pytest

from elasticity.config import ALGORITHMS, PolicyConfig
from elasticity.policies import REGISTRY, get_policy
from elasticity.policies.base import PolicyContext
from elasticity.policies.rl import FEATURES, WEIGHTS_PATH, RLPolicy, RLWeights
from elasticity.policies.rl_train import FAMILIES, training_episode, training_episodes, train
from elasticity.simulation import loads as L
from elasticity.simulation.runner import POLICIES, run
from elasticity.simulation.scenarios import Scenario, builtin, default_job, stress
from elastream.cli import main
from tests.unit.elasticity.helpers import obs, stage


def ctx(o, history=None, **cfg):
    return PolicyContext(o, history or [o], PolicyConfig(**cfg), now=o.timestamp)


def fixed(more: float = 0.0, less: float = 0.0) -> RLWeights:
    """Weights that always prefer one action (a bias only)."""
    bias = lambda b: [b] + [0.0] * (len(FEATURES) - 1)  # noqa: E731
    return RLWeights(bias(more), bias(less), u_more=0.7, u_less=0.9, scale_down_delay_s=300.0)


def test_shipped_weights_load_small_and_selectable_everywhere():
    assert WEIGHTS_PATH.stat().st_size < 200_000
    pol = get_policy("rl")
    assert isinstance(pol, RLPolicy) and len(pol.weights.w_more) == len(pol.weights.w_less) == len(FEATURES)
    assert 0.4 <= pol.weights.u_more <= 0.95 and 0.5 <= pol.weights.u_less <= 0.98
    assert pol.weights.training["families"] and set(pol.weights.training["families"]) <= set(FAMILIES)
    assert "rl" in REGISTRY and "rl" in ALGORITHMS and "rl" in POLICIES
    PolicyConfig(algorithm="rl")


def test_training_never_uses_the_benchmark_scenarios_or_seeds():
    bench = {**builtin(), **stress()}
    bench_seeds = {sc.seed for sc in bench.values()}
    episodes = training_episodes(2)
    assert len(episodes) == 2 * len(FAMILIES)
    assert not {sc.seed for sc in episodes} & bench_seeds
    assert not {sc.name for sc in episodes} & set(bench)


def _scenario(first_rate: float, rate: float, minutes: float = 40) -> Scenario:
    """A job deployed for `first_rate` that then gets `rate`."""
    return Scenario("t", "test", minutes * 60.0, L.step(first_rate, rate, 2.0), noise_sd=0.03, dt=2.0, seed=5,
                    job=default_job(first_rate))


def test_scales_out_under_overload_and_keeps_the_latency_target():
    res = run(_scenario(1000, 2000), "rl", keep_decisions=True)
    start, end = res.initial_parallelism, res.timeline.parallelism[-1]
    assert all(e > s for s, e in zip(start, end)), (start, end)
    # after the scale-out (and its warm-up) the job meets the 5 s target again
    assert res.timeline.latency_p99[-300:].max() < 5.0
    out = next(d for d in res.decisions if d.action == "scale")
    assert out.reason.startswith("rl: more for ") and "scores more=" in out.reason


def test_scales_in_under_idle_load():
    res = run(_scenario(3000, 1000, minutes=60), "rl")
    start, end = res.initial_parallelism, res.timeline.parallelism[-1]
    assert sum(end) < 0.7 * sum(start), (start, end)
    assert res.summary["slo_violation_s"] <= 10  # at most the rescale pauses' blips


def test_actions_respect_the_bounds():
    hot = stage("src", p=4, rate=4000, proc=1000, busy=1.0, backlog=50_000, maxp=6)
    more = RLPolicy(fixed(more=5.0)).propose(ctx(obs(hot), max_parallelism=64))
    assert more.targets["src"] == 6  # the stage's own max parallelism (key groups)
    assert RLPolicy(fixed(more=5.0)).propose(ctx(obs(hot), max_parallelism=5)).targets["src"] == 5
    at_top = stage("src", p=5, rate=4000, proc=1000, busy=1.0, maxp=None)
    p = RLPolicy(fixed(more=5.0)).propose(ctx(obs(at_top), max_parallelism=5))
    assert p.targets["src"] == 5 and "same src" in p.reason  # no step left: "same", said so
    idle = stage("src", p=10, rate=10, proc=10, busy=0.01)
    less = RLPolicy(fixed(less=5.0)).propose(ctx(obs(idle), min_parallelism=3))
    assert less.targets["src"] == 4  # at most 60 % fewer per step (max_scale_down_factor)
    low = stage("src", p=3, rate=10, proc=10, busy=0.01)
    assert RLPolicy(fixed(less=5.0)).propose(ctx(obs(low), min_parallelism=3)).targets["src"] == 3


def test_one_step_more_is_sized_from_the_load_and_at_least_one():
    s = stage("src", p=4, rate=4000, proc=1000, busy=1.0)  # 250/s per instance; 4000/s at u_more 0.7
    assert RLPolicy(fixed(more=5.0)).propose(ctx(obs(s))).targets["src"] == 23
    calm = stage("src", p=4, rate=100, proc=100, busy=0.1)
    assert RLPolicy(fixed(more=5.0)).propose(ctx(obs(calm))).targets["src"] == 5


def _job(scale_rate: float, scale_p: int, p99: float, busy: tuple, backlog: float):
    rate = 2000.0 * scale_rate
    return obs(
        stage("source", p=8 * scale_p, rate=rate, proc=rate * 0.9, busy=busy[0], backlog=backlog * scale_rate, maxp=None),
        stage("enrich", p=20 * scale_p, rate=rate * 0.9, proc=rate * 0.9, busy=busy[1], upstream=["source"],
              output_rate=rate * 0.45, maxp=None),
        stage("aggregate", p=6 * scale_p, rate=rate * 0.45, proc=rate * 0.45, busy=busy[2], upstream=["enrich"],
              maxp=None),
        p99=p99,
    )


@pytest.mark.parametrize("case", [
    dict(p99=9.0, busy=(1.0, 0.95, 0.8), backlog=30_000),  # overloaded
    dict(p99=0.8, busy=(0.2, 0.15, 0.1), backlog=0),  # idle
    dict(p99=1.2, busy=(0.6, 0.7, 0.75), backlog=0),  # about right
])
def test_features_and_decisions_are_scale_free(case):
    pol = RLPolicy()
    small = _job(1, 1, **case)
    base = pol.propose(ctx(small, max_parallelism=1000))
    for rate_x, p_x in ((10, 1), (10, 10)):  # 10× the rates (and capacities); and with 10× the instances too
        o = _job(rate_x, p_x, **case)
        big = pol.propose(ctx(o, max_parallelism=1000))
        for name, p0 in base.targets.items():
            for f in ("load", "backlog", "latency", "trend"):
                assert base.inputs[f"{name}.{f}"] == pytest.approx(big.inputs[f"{name}.{f}"])
            if p_x == 1:  # the same job at 10× the speed: the very same scores and targets
                assert base.inputs[f"{name}.score_more"] == pytest.approx(big.inputs[f"{name}.score_more"])
                assert big.targets[name] == p0
            # 10× the instances: a step's size in instances is finer, its direction the same
            assert np.sign(p0 - small.stage(name).parallelism) == np.sign(big.targets[name] - o.stage(name).parallelism)


def test_train_rl_is_deterministic(tmp_path):
    out = tmp_path / "w.json"
    args = ["train-rl", "--seeds", "1", "--iterations", "1", "--population", "1", "--elite", "1",
            "--families", "idle", "--out", str(out)]
    assert main(args) == 0
    again = train(seeds=1, iterations=1, population=1, elite=1, families=["idle"])
    saved = json.loads(out.read_text())
    assert saved["w_more"] == again.w_more and saved["w_less"] == again.w_less
    assert saved["training"]["fitness_per_hour"] == again.training["fitness_per_hour"]
    assert saved["training"]["families"] == ["idle"] and saved["training"]["evaluations"] == 2
    RLPolicy(RLWeights.load(out))  # what train-rl writes, the policy loads


def test_training_episodes_are_seeded_and_varied():
    a, b = training_episode("web-day", 70_001), training_episode("web-day", 70_001)
    assert np.array_equal(a.arrivals(), b.arrivals())
    levels = {round(float(training_episode("steps", s).arrivals()[0])) for s in range(70_000, 70_005)}
    assert len(levels) == 5  # job sizes vary across seeds
