"""The CSV-trace benchmark: an independent trace set (other generators than the families, written as a user's
traces are) and the broad suite's verdicts on any directory of traces, grouped in families by file name."""
from __future__ import annotations

import re

import numpy as np
import pytest

from elasticity.errors import InputError
from elasticity.simulation.loads import read_trace
from elasticity.simulation.trace_set import SHAPES, VARIANTS, trace, write_trace_set
from elasticity.trace_bench import run_traces, trace_family, verdicts
from elastream.cli import main


def test_the_independent_set_writes_every_shape_and_variant_as_valid_replayable_traces(tmp_path):
    paths = write_trace_set(tmp_path / "a")
    assert sorted(p.name for p in paths) == sorted(f"{s}-{v}.csv" for s in SHAPES for v in VARIANTS)
    again = write_trace_set(tmp_path / "b")
    for p, q in zip(paths, again):
        assert p.read_text() == q.read_text()  # the same set every time
        tr = read_trace(str(p))  # the reader a user's trace goes through: header, increasing times, rates ≥ 0
        assert 3 * 3600 <= tr.duration_s <= 24 * 3600
    t, rate = trace("week", "b")
    assert np.all(np.diff(t) == 60.0) and rate.min() > 0  # variant b: a row a minute
    t, rate = trace("flash-crowd", "a")
    assert rate.max() > 2.5 * np.median(rate)  # a crowd stands out of the base
    assert not np.array_equal(trace("on-off", "c", seed=0)[1], trace("on-off", "c", seed=1)[1][:len(t)])


def test_a_trace_family_is_its_name_up_to_the_last_dash():
    assert trace_family("web-day-c") == "web-day" and trace_family("mytrace") == "mytrace"


def _write(path, rates, step=60.0):
    path.write_text("time,rate\n" + "".join(f"{i * step:.0f},{r}\n" for i, r in enumerate(rates)))


def test_your_traces_are_run_per_policy_and_judged_per_family(tmp_path):
    _write(tmp_path / "step-1.csv", [800] * 15 + [2400] * 30)  # 45 min: a step up ×3
    _write(tmp_path / "step-2.csv", [1500] * 20 + [500] * 25)  # and one down
    _write(tmp_path / "flat.csv", [1000] * 40)
    (tmp_path / ".#flat.csv").write_text("an editor's lock file, not a trace")
    results, floors = run_traces(tmp_path, policies=("ds2", "elastream", "oracle"))
    assert set(results) == {"step-1", "step-2", "flat"} and set(floors) == set(results)
    up = results["step-1"]
    assert up["elastream"]["rescales"] >= 1 and up["ds2"]["rescales"] >= 1  # both follow the step
    assert up["elastream"]["executor_seconds"] > results["flat"]["elastream"]["executor_seconds"]
    families, agg = verdicts(results)
    assert set(families) == {"step", "flat"} and families["step"]["elastream"]["runs"] == 2
    total = sum(results[n]["elastream"]["rescales"] for n in results)
    assert agg["elastream_rescales_over_ds2"] == round(total / sum(results[n]["ds2"]["rescales"] for n in results), 3)


def test_the_cli_runs_a_directory_of_traces_and_refuses_what_it_cannot_run(tmp_path, capsys):
    (tmp_path / "t").mkdir()
    _write(tmp_path / "t" / "flat-a.csv", [700] * 30)
    assert main(["bench", "elasticity", "--traces", str(tmp_path / "t"), "--policies", "ds2",
                 "--no-docs"]) == 0
    out = capsys.readouterr().out
    assert "| flat | 1 | elastream |" in out and "--traces" in out
    assert re.search(r"trace by trace \(as a set of one trace per shape is judged\): "
                     r"SLO and cost ≤ ds2's in [01] of 1 traces", out)
    with pytest.raises(InputError, match="no such directory"):
        run_traces(tmp_path / "nope", policies=("ds2", "elastream", "oracle"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no \\*.csv trace"):
        run_traces(tmp_path / "empty", policies=("ds2", "elastream", "oracle"))
    assert main(["bench", "elasticity", "--suite", "broad", "--traces", str(tmp_path / "t"), "--no-docs"]) == 2
    assert "--traces" in capsys.readouterr().out
    assert main(["bench", "elasticity", "--traces", str(tmp_path / "t"), "--scale", "0.5", "--no-docs"]) == 2
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "neg-a.csv").write_text("time,rate\n0,10\n60,-3\n")
    assert main(["bench", "elasticity", "--traces", str(tmp_path / "bad"), "--no-docs"]) == 2
    cap = capsys.readouterr()
    assert "neg-a.csv:3" in cap.err + cap.out  # the reader's error, naming the file and line
    assert main(["bench", "elasticity", "--write-traces", str(tmp_path / "set")]) == 0
    assert len(list((tmp_path / "set").glob("*.csv"))) == len(SHAPES) * len(VARIANTS)


def test_the_second_set_script_writes_32_traces_the_reader_accepts(tmp_path):
    import runpy
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[3] / "scripts" / "second-trace-set.py"
    argv, sys.argv = sys.argv, [str(script), str(tmp_path)]
    try:
        runpy.run_path(str(script), run_name="__main__")
    finally:
        sys.argv = argv
    files = sorted(tmp_path.glob("*.csv"))
    assert len(files) == 32 and (tmp_path / "INDEX.md").exists()
    families = {trace_family(f.stem) for f in files}
    assert families == set(SHAPES)  # the same eight shapes, judged as families by --traces
    for f in files:
        assert read_trace(str(f)).duration_s >= 3 * 3600 - 60


def _run(violation: float, cost: float, rescales: int, ds2_violation: float = 10.0, ds2_cost: float = 1.5,
         ds2_rescales: int = 10) -> dict:
    """One trace's results: elastream's and ds2's executor-seconds given as × the oracle's (1000)."""
    return {"elastream": {"slo_violation_s": violation, "executor_seconds": 1000.0 * cost, "rescales": rescales},
            "ds2": {"slo_violation_s": ds2_violation, "executor_seconds": 1000.0 * ds2_cost, "rescales": ds2_rescales},
            "oracle": {"slo_violation_s": 0.0, "executor_seconds": 1000.0, "rescales": 100}}


def test_the_odds_of_a_one_per_shape_set_meeting_each_criterion():
    from elasticity.trace_bench import one_per_shape_odds

    results = {"week-a": _run(0.0, 1.2, 4), "week-b": _run(20.0, 1.2, 4),  # b: more violation than ds2
               "sawtooth-a": _run(0.0, 1.2, 4), "sawtooth-b": _run(0.0, 1.4, 8)}  # b: dearer than 1.25 ×, 8 of 10
    odds = one_per_shape_odds(results, draws=4000)
    assert odds["every_family"] == pytest.approx(0.5, abs=0.05)  # week-b drawn half the time
    # rescales: 4 + 4 of 20 always; with sawtooth-b 12 of 20 = 0.6 × ds2's: still within
    assert odds["rescales"] == 1.0
    # the median of two traces: over 1.25 × whenever sawtooth-b is drawn (1.2 and 1.4 → 1.3)
    assert odds["median"] == pytest.approx(0.5, abs=0.05)
    assert odds["all"] == pytest.approx(0.25, abs=0.05)  # week-a and sawtooth-a
    assert one_per_shape_odds(results, draws=4000) == odds  # seeded: the same figures every run
    assert one_per_shape_odds({"week-a": {"elastream": results["week-a"]["elastream"]}}) is None  # no ds2 to judge by
