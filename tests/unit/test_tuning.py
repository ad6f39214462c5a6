"""Configuration tuning (elasticity.tuning): the space, the loop (failed configurations are kept and never retried),
the optimisers on a known surface, and the Spark-like response surfaces of `elastream bench tuning`, modelled and
fitted from a real run."""
from __future__ import annotations

import json
import math
import statistics

import numpy as np
import pytest

from elasticity.errors import InputError
from elasticity.tuning.fitted import fit, load_report
from elasticity.tuning.loop import EvaluationFailed, tune
from elasticity.tuning.optimizers import OPTIMIZERS, BayesOpt, RandomSearch, expected_improvement
from elasticity.tuning.problems import PROBLEMS, SPARK_SPACE
from elasticity.tuning.space import Choice, ConfigSpace, Float, Int

SPACE = ConfigSpace([Float("x", 0.01, 100.0, default=50.0, log=True), Int("n", 1, 64, default=1),
                     Choice("mode", ("a", "b", "c"), default="a")])


def bowl(config):
    """Lowest (1.0) at x = 1, n = 16, mode b; n above 48 fails."""
    if config["n"] > 48:
        raise EvaluationFailed("out of memory")
    return 1.0 + np.log10(config["x"]) ** 2 + (config["n"] - 16) ** 2 / 100 + (config["mode"] != "b")


def test_a_point_and_its_configuration_map_onto_each_other_and_checks_name_the_knob():
    assert SPACE.config(SPACE.point({"x": 1.0, "n": 16, "mode": "b"})) == {"x": pytest.approx(1.0), "n": 16,
                                                                           "mode": "b"}
    assert SPACE.config(np.ones(3))["x"] == 100.0 and SPACE.config(np.zeros(3))["x"] == 0.01
    with pytest.raises(InputError, match="^n: 65 is not an integer in"):
        SPACE.check({"x": 1.0, "n": 65, "mode": "a"})
    with pytest.raises(InputError, match="^speed: not a knob"):
        SPACE.check({"x": 1.0, "n": 1, "mode": "a", "speed": 2})
    with pytest.raises(InputError, match="default"):
        ConfigSpace([Int("n", 1, 4, default=9)])


def test_latin_hypercube_puts_one_point_in_each_slice_of_every_knob():
    u = SPACE.latin_hypercube(np.random.default_rng(1), 10)
    for d in range(u.shape[1]):
        assert sorted((u[:, d] * 10).astype(int)) == list(range(10))


def test_neighbours_move_integers_and_choices_by_values_and_pairs_together():
    space = ConfigSpace([Int("executors", 1, 6, default=2), Int("cores", 1, 3, default=1),
                         Float("wait", 0.0, 10.0, default=3.0), Int("partitions", 4, 400, default=200, log=True)])
    u = space.point({"executors": 6, "cores": 1, "wait": 3.0, "partitions": 8})
    near = [space.config(v) for v in space.neighbours(u)]
    assert {"executors": 5, "cores": 1, "wait": 3.0, "partitions": 8} in near
    assert {c["partitions"] for c in near} >= {4, 7, 9, 16}  # one value, and half and double on a log scale
    assert {"executors": 5, "cores": 2, "wait": 3.0, "partitions": 8} in near  # two knobs at once
    assert all(c != space.config(u) for c in near)
    sweep = [space.config(v) for v in space.discrete_neighbours(u)]
    assert {"executors": 4, "cores": 2, "wait": 3.0, "partitions": 8} in sweep  # 6 x 1 -> 4 x 2 in one move
    assert {"executors": 6, "cores": 1, "wait": 0.0, "partitions": 8} in sweep  # a number at its range's end
    assert all(c["partitions"] == 8 for c in sweep)  # many-valued integers are left to the model
    assert space.discrete_key(u) == (6, 1)


def test_a_stalled_search_tries_the_untried_settings_next_door_and_finds_the_basin_the_model_missed():
    space = ConfigSpace([Int("executors", 1, 6, default=6), Int("cores", 1, 3, default=1),
                         Float("wait", 0.0, 10.0, default=3.0)])

    def latency(config):  # the more of the 8 cores, the better; only 4 x 2 uses them all
        cores = config["executors"] * config["cores"]
        if cores > 8:
            raise EvaluationFailed("the cluster has 8 cores")
        return 10.0 - cores + config["wait"] / 10

    def found(patience):
        return sum(tune(latency, space, BayesOpt(space, seed=s, starts=3, patience=patience), budget=15)
                   .best().config["executors"] == 4 for s in range(10))

    assert found(patience=3) >= 7 > 3 >= found(patience=1000)  # measured: 8 of 10 against 1


def test_the_loop_starts_from_the_default_records_failures_and_never_retries_them():
    calls = []

    def objective(config):
        calls.append(SPACE.key(config))
        return bowl(config)

    result = tune(objective, SPACE, RandomSearch(SPACE, seed=3), budget=40)
    assert result.trials[0].config == SPACE.default() and len(result.trials) == 40
    failed = [t for t in result.trials if t.value is None]
    assert failed and all(t.failed == "out of memory" for t in failed)
    assert len(set(calls)) == len(calls)  # nothing evaluated twice, failed ones included
    curve = result.best_so_far()
    assert all(a >= b for a, b in zip(curve[1:], curve[2:])) and curve[-1] == result.best().value


def test_a_small_space_ends_the_loop_when_every_configuration_was_tried():
    tiny = ConfigSpace([Choice("mode", ("a", "b"), default="a")])
    result = tune(lambda c: 1.0, tiny, RandomSearch(tiny, seed=0), budget=10)
    assert len(result.trials) == 2
    with pytest.raises(InputError, match="budget"):
        tune(lambda c: 1.0, tiny, RandomSearch(tiny), budget=0)


def test_expected_improvement_prefers_a_lower_mean_and_then_more_uncertainty():
    ei = expected_improvement(np.array([0.5, 1.0, 1.0]), np.array([0.1, 0.1, 0.5]), best=1.0)
    assert ei[0] > ei[2] > ei[1] > 0


@pytest.mark.parametrize("method", sorted(OPTIMIZERS))
def test_every_method_improves_on_the_default(method):
    result = tune(bowl, SPACE, OPTIMIZERS[method](SPACE, seed=0), budget=30)
    assert result.best().value < bowl(SPACE.default()) / 2


def test_bayesian_optimisation_gets_closer_than_random_search_at_equal_budget():
    finals = {m: statistics.median(tune(bowl, SPACE, cls(SPACE, seed=s), budget=25).best().value for s in range(5))
              for m, cls in (("bo", BayesOpt), ("random", RandomSearch))}
    assert finals["bo"] < finals["random"], finals


def test_the_spark_like_surfaces_run_their_default_and_fail_for_the_reasons_spark_would():
    default = SPARK_SPACE.default()
    for problem in PROBLEMS.values():
        assert problem.evaluate(default) > 0
    job = PROBLEMS["wordcount"]
    with pytest.raises(EvaluationFailed, match="cannot start: 18 cores"):
        job.evaluate({**default, "executors": 6, "executor_cores": 3})
    with pytest.raises(EvaluationFailed, match="out of memory"):
        job.evaluate({**default, "executors": 1, "executor_memory_mb": 512})
    with pytest.raises(EvaluationFailed, match="falls behind"):
        job.evaluate({**default, "trigger_interval_s": 0.2})
    fewer_partitions = {**default, "shuffle_partitions": 8, "executors": 4}
    assert job.evaluate(fewer_partitions) < job.evaluate(default)  # 200 tasks a batch on 2 cores is overhead


def test_bad_ranges_and_non_finite_objectives_are_named():
    with pytest.raises(InputError, match="^x: the range"):
        ConfigSpace([Float("x", 0.0, 1.0, default=0.5, log=True)])
    result = tune(lambda c: float("nan"), SPACE, RandomSearch(SPACE), budget=2)
    assert result.best() is None and result.trials[0].failed == "the objective was nan"


def test_a_surface_fitted_from_a_real_run_reproduces_its_measurements_and_refuses_too_few():
    report = load_report("wordcount-real")
    assert json.loads(json.dumps(ConfigSpace.from_description(report["space"]).describe())) == report["space"]
    surface = fit(report, "wordcount-real-fit")
    assert [k.name for k in surface.space.knobs] == [k["name"] for k in report["space"]]
    passed = [t for t in report["trials"] if t["p99_s"] is not None]
    close = 0
    for t in passed:
        try:
            close += abs(math.log(surface.evaluate(t["config"]) / t["p99_s"])) < 0.25
        except EvaluationFailed:
            pass
    # measured: 6 of 9 within 25 %, rms 0.127 (7 and 0.083 before the simulator's micro-batch latency counted the
    # wait for a batch and the batch itself, 2026-11-26: the real run's own calibration matches it better)
    assert close >= len(passed) - 3 and surface.fit_error < 0.15
    for t in report["trials"]:
        if t["p99_s"] is None:
            with pytest.raises(EvaluationFailed):
                surface.evaluate(t["config"])
    with pytest.raises(InputError, match="at least 3"):
        fit({**report, "trials": passed[:2]}, "too-few")
