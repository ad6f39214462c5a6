"""The benchmark's result shape, its table and its command-line entry (without touching docs/)."""
import argparse
import json

import numpy as np
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


def test_experiment_8_is_experiment_4_at_five_times_the_size():
    from elasticity.placement.instances import EXPERIMENTS

    items, bins = make_instance(8, 0)
    assert items.loads.shape == (1000, 180) and bins.m == 500 and (bins.capacity == 500.0).all()
    mean, swing = items.loads.mean(axis=1), items.loads.max(axis=1) - items.loads.min(axis=1)
    assert (mean > 95).all() and (mean < 205).all()  # a ~ U[100, 200], as in experiment 4
    assert (swing > 2 * 40 * 0.99).all() and (swing < 2 * 60 * 1.01).all()  # b ~ U[40, 60]
    e4, e8 = EXPERIMENTS[4], EXPERIMENTS[8]
    assert (e8.a, e8.b) == (e4.a, e4.b) and e8.ga_nodes is None and 8 not in TABLE1
    assert not np.allclose(items.loads[:200], make_instance(4, 0)[0].loads)  # its own seeds
    with pytest.raises(InputError):
        make_instance(9, 0)


def test_experiment_lists_and_their_docs_sections():
    from elasticity.placement.benchmark import _parse_experiments, section_name

    assert _parse_experiments(None) == list(range(1, 8))  # the default stays Table 1
    assert _parse_experiments("4,7,8") == [4, 7, 8] and _parse_experiments("6-8") == [6, 7, 8]
    assert section_name(range(1, 8)) == "placement" == section_name(range(1, 9))
    assert section_name([4, 7, 8]) == "placement-4,7,8"
    assert section_name([2], "random") == "placement-sensitivity-2"
    assert section_name(range(1, 8), "random") == "placement-sensitivity"


def test_experiment_8_has_no_paper_rows(tmp_path):
    out = tmp_path / "p8.json"
    args = argparse.Namespace(seeds=1, seed_base=5, json=str(out), no_docs=True, experiments="8",
                              algorithms="ffd,rstorm", time_limit=None)
    assert bench_main(args) == 0
    data = json.loads(out.read_text())
    e = data["experiments"]["8"]
    assert e["paper"] is None and e["operators"] == 1000 and e["nodes_available"] == 500
    assert e["lower_bound"] <= e["algorithms"]["ffd"]["nodes"] <= 500
    assert data["command"].startswith("elastream bench placement --seeds 1 --seed-base 5 --experiments 8 "
                                      "--algorithms ffd,rstorm")
    name, md = args.docs_section
    assert name == "placement-8"
    assert "| 8 | 1000 / 500 | paper GA |" not in md and "is ours" in md
    assert "| 8 | 1000 / 500 | ffd | 3" in md and "| 8 | 1000 / 500 | **lower bound** |" in md


def test_cli_takes_experiments_as_a_flag():
    from elastream.cli import build_parser

    args = build_parser().parse_args(["bench", "placement", "--experiments", "4,7,8", "--seeds", "3",
                                      "--seed-base", "100", "--no-docs"])
    assert (args.experiments, args.seeds, args.seed_base, args.no_docs) == ("4,7,8", 3, 100, True)
    assert args.handler.__name__ == "_run_placement"
    assert build_parser().parse_args(["bench", "placement", "--experiments", "1-3"]).experiments == "1-3"
    for bad in ("4,x", "4;7", ""):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["bench", "placement", "--experiments", bad])
