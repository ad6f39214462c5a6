"""`elastream tune`'s pure parts: the Spark knobs and their patch, and how a trial is measured from its batches."""
import json

import pytest

from elastream.api.streamapp import StreamAppSpec
from elastream.tune import knobs
from elastream.tune.session import TuneSettings, progress_line, trial_load
from elastream.tune.trials import Batch, TrialLoad, measure, row_weighted_p99, trial_spec
from elasticity.tuning.loop import EvaluationFailed, Trial, TuningResult
from spark_apps.source import GeneratorConfig

SPEC = StreamAppSpec.model_validate({"engine": "spark", "spark": {
    "application": {"builtin": "wordcount"}, "triggerInterval": "3s", "maxParallelism": 4,
    "executor": {"cores": 1, "memory": "1g"}, "executors": {"initial": 1, "min": 1, "max": 2},
    "conf": {"spark.locality.wait": "500ms"},
    "source": {"generator": {"profile": "step", "rate": 400, "peakRate": 5000, "period": "100s"}}}})


def test_the_default_configuration_is_the_streamapps_own():
    assert knobs.space_for(SPEC).default() == {
        "trigger_interval_s": 3.0, "shuffle_partitions": 4, "max_records_per_trigger": knobs.NO_CAP,
        "executor_cores": 1, "executor_memory_mb": 1024, "state_store": "hdfs", "locality_wait_s": 0.5}


def test_a_configuration_survives_the_patch_and_back():
    config = {"trigger_interval_s": 1.25, "shuffle_partitions": 12, "max_records_per_trigger": 20000,
              "executor_cores": 2, "executor_memory_mb": 1536, "state_store": "rocksdb", "locality_wait_s": 0.0}
    tuned = knobs.apply(SPEC, config)
    assert knobs.current(tuned) == config
    assert tuned.spark.conf[knobs.STATE_STORE].endswith("RocksDBStateStoreProvider")
    assert tuned.spark.source.generator.peak_rate == 5000  # what the patch does not name stays
    json.dumps(knobs.patch(config))  # a merge patch kubectl can read


def test_no_cap_unsets_max_records_per_trigger():
    capped = knobs.apply(SPEC, {**knobs.current(SPEC), "max_records_per_trigger": 5000})
    assert capped.spark.source.max_records_per_trigger == 5000
    uncapped = knobs.apply(capped, {**knobs.current(capped), "max_records_per_trigger": knobs.NO_CAP})
    assert uncapped.spark.source.max_records_per_trigger is None
    assert knobs.patch(knobs.current(uncapped))["spec"]["spark"]["source"] == {"maxRecordsPerTrigger": None}


@pytest.mark.parametrize("text,mb", [("768m", 768), ("2g", 2048), ("1gb", 1024), ("1048576", 1), ("512M", 512)])
def test_memory_strings(text, mb):
    assert knobs.memory_mb(text) == mb


def test_trials_run_at_the_peak_on_the_most_executors_with_the_tuned_knobs(tmp_path):
    load = trial_load(SPEC, TuneSettings(3, "bo", "out"))
    assert (load.rate, load.executors) == (5000, 2)
    spec = trial_spec(SPEC, {**knobs.current(SPEC), "trigger_interval_s": 2.0}, load, tmp_path / "load.csv", 30)
    assert spec.spark.source.generator.profile == "trace"
    profile = GeneratorConfig(**{"profile": "trace", "trace": spec.spark.source.generator.trace}).build()
    assert profile.rate_at(29) == 0 and profile.rate_at(31) == 5000 and profile.rate_at(1e6) == 5000
    assert (spec.spark.executors.min, spec.spark.executors.max, spec.spark.trigger_interval) == (2, 2, "2000ms")


LOAD = TrialLoad(rate=1000, executors=1, measure_s=20, shrink_s=30)


def batches(backlogs, p99=2.0, every=2.0, rows=2000):
    return [Batch(100 + i * every, rows, p99, b) for i, b in enumerate(backlogs)]


def test_the_window_opens_once_the_start_up_backlog_is_worked_off():
    assert measure([], 1000, 2.0, LOAD) == (None, "waiting for the first micro-batch")
    assert measure(batches([50_000, 30_000]), 1000, 2.0, LOAD)[0] is None
    worked_off = batches([50_000, 20_000, 500] + [800] * 12)
    p99, _ = measure(worked_off, 1000, 2.0, LOAD)
    assert p99 == 2.0


def test_a_standing_backlog_is_measured_and_a_growing_one_falls_behind():
    assert measure(batches([50_000 - 1000 * i for i in range(20)]), 1000, 2.0, LOAD)[0] is None  # still shrinking
    standing = batches([50_000] + [20_000 + (i % 2) * 500 for i in range(40)], p99=12.0)
    assert measure(standing, 1000, 2.0, LOAD)[0] == 12.0
    with pytest.raises(EvaluationFailed, match="fell behind"):
        measure(batches([50_000 + 1000 * i for i in range(40)]), 1000, 2.0, LOAD)
    with pytest.raises(EvaluationFailed, match="never caught up"):
        measure(batches([50_000 - 100 * i for i in range(20)]), 1000, 2.0, TrialLoad(1000, 1, catch_up_s=30))


def test_a_growing_backlog_in_the_window_is_falling_behind():
    growing = batches([500] + [500 + 400 * i for i in range(15)])
    with pytest.raises(EvaluationFailed, match="fell behind"):
        measure(growing, 1000, 2.0, LOAD)


def test_the_p99_weighs_batches_by_their_records():
    many_fast = [Batch(0, 990, 1.0, 0)] + [Batch(1, 10, 9.0, 0)]
    assert row_weighted_p99(many_fast) == 1.0
    few_fast = [Batch(0, 980, 1.0, 0)] + [Batch(1, 20, 9.0, 0)]
    assert row_weighted_p99(few_fast) == 9.0
    with pytest.raises(EvaluationFailed):
        row_weighted_p99([Batch(0, 0, None, 0)])


def test_the_progress_line_shows_the_best_so_far():
    result = TuningResult([Trial(1, knobs.current(SPEC), 4.0), Trial(2, knobs.current(SPEC), None, "fell behind")])
    line = progress_line(result.trials[-1], result, budget=4)
    assert line.startswith("[##########          ] 2/4 best 4.00s (#1)") and "failed: fell behind" in line
