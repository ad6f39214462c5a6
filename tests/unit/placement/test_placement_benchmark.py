"""The benchmark's result shape, its table and its command-line entry (without touching docs/)."""
import argparse
import json

import pytest

from elasticity.errors import InputError
from elasticity.placement.benchmark import bench_main, markdown, run
from elasticity.placement.instances import TABLE1, make_instance


def test_instances_follow_the_protocol():
    items, bins = make_instance(5, 0)
    assert items.loads.shape == (50, 180) and bins.m == 25 and bins.capacity[0] == 500.0
    mean = items.loads.mean(axis=1)
    assert (mean > 85).all() and (mean < 155).all()  # a ~ U[90, 150] (+ a near-zero mean of the sinusoid)
    assert TABLE1[4].ga_nodes == 72.8
    a, b = make_instance(5, 0), make_instance(5, 1)
    assert (a[0].loads != b[0].loads).any()
    assert (make_instance(5, 0)[0].loads == a[0].loads).all()


def test_run_reports_means_bounds_and_paper_numbers():
    res = run(seeds=2, experiments="1", algorithms=["elastream", "ffd", "rstorm", "rstorm-mean"])
    e = res["experiments"]["1"]
    assert e["exact_optimum"] == e["lower_bound"] >= e["simple_lower_bound"]
    assert set(e["algorithms"]) == {"elastream", "ffd", "rstorm"} and set(e["variants"]) == {"rstorm-mean"}
    el = e["algorithms"]["elastream"]
    assert el["nodes"] == e["exact_optimum"] and el["overload_pct"] == 0.0 and el["zero_overload_runs"] == 2
    assert e["variants"]["rstorm-mean"]["overload_pct"] > 0
    assert e["paper"]["ga"]["nodes"] == 4.3
    md = markdown(res, "elastream bench placement --seeds 2")
    assert "`elastream bench placement --seeds 2`" in md and "paper GA" in md and "exact optimum" in md


def test_bad_arguments_are_input_errors():
    with pytest.raises(InputError):
        run(seeds=1, experiments="9")
    with pytest.raises(InputError):
        run(seeds=1, experiments="1", algorithms=["nope"])
    with pytest.raises(InputError):
        run(seeds=0)


def test_bench_main_writes_json(tmp_path, capsys):
    out = tmp_path / "p.json"
    args = argparse.Namespace(seeds=1, seed_base=3, json=str(out), no_docs=True, experiments="1",
                              algorithms="ffd,greedy")
    assert bench_main(args) == 0
    data = json.loads(out.read_text())
    assert set(data["experiments"]["1"]["algorithms"]) == {"ffd", "greedy"}
    assert "--seed-base 3" in data["command"]
    assert "paper GA" in capsys.readouterr().out
