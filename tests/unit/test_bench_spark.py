"""bench spark's pure parts: the manifests it runs and the figures it takes from a run's report."""
from __future__ import annotations

import json

import pytest

from elastream.api.streamapp import StreamAppSpec
from elastream.bench_spark import bench_main, manifest, score
from elastream.errors import UserError


def test_each_policy_runs_the_same_example_with_only_its_algorithm_and_load_changed(tmp_path):
    ds2, ela = manifest("nexmark-q5", "ds2", "step"), manifest("nexmark-q5", "elastream", "step")
    assert [d["spec"].get("algorithm") for d in ds2] == ["ds2", None]
    assert ds2[1] == ela[1]  # the StreamApp is the same
    sine = manifest("nexmark-q5", "ds2", "sinusoid")[1]["spec"]["spark"]["source"]["nexmark"]
    assert sine["profile"] == "sinusoid" and sine["period"] == "240s"  # two of the example's 120-s periods
    trace = tmp_path / "t.csv"
    trace.write_text("time,rate\n0,100\n60,900\n")
    app = manifest("wordcount", "hpa", str(trace))[1]
    assert app["spec"]["spark"]["source"]["generator"]["trace"] == str(trace)
    StreamAppSpec.model_validate(app["spec"])  # still a valid StreamApp


def test_score_integrates_violation_and_executors_over_the_samples(tmp_path):
    samples = [{"t": 0, "latency_p99_s": 2.0, "parallelism": {"executors": 1}},
               {"t": 2, "latency_p99_s": 12.0, "parallelism": {"executors": 1}},
               {"t": 4, "latency_p99_s": 15.0, "parallelism": {"executors": 2}},
               {"t": 6, "latency_p99_s": 3.0, "parallelism": {"executors": 2}}]
    (tmp_path / "timeline.json").write_text(json.dumps(samples))
    (tmp_path / "report.json").write_text(json.dumps({"rescales": [{"t": 3}], "missing": 0, "duplicates": 0,
                                                      "records_produced": 10, "duration_s": 6}))
    r = score(tmp_path, latency_target_s=10.0)
    assert (r["slo_violation_s"], r["executor_seconds"], r["rescales"]) == (4.0, 8.0, 1)


def test_bad_arguments_name_the_option():
    import argparse

    with pytest.raises(UserError, match="--policies: unknown foo"):
        bench_main(argparse.Namespace(policies="ds2,foo", load="step", duration=60, app="nexmark-q5"))
    with pytest.raises(UserError, match="--load"):
        bench_main(argparse.Namespace(policies="ds2", load="zigzag", duration=60, app="nexmark-q5"))
