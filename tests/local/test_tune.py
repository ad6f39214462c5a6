"""`elastream tune` for real: two evaluations of the short StreamApp's PySpark job (its own configuration first),
a report that names both, a patch the StreamApp takes, a convergence plot, and no process left behind."""
import json
from pathlib import Path

import pytest
import yaml

from elastream.cli import main
from elastream.local import manifest
from elastream.tune import knobs
from tests.local.test_local_run import processes_mentioning

HERE = Path(__file__).parent
pytestmark = pytest.mark.slow


@pytest.mark.extended  # CI time (2026-12-06): 126 s; tune's loop is unit-tested on surfaces fitted from real runs
def test_tune_runs_the_real_job_and_writes_its_report(tmp_path, capsys):
    report_dir = tmp_path / "tune"
    code = main(["tune", str(HERE / "short.yaml"), "--budget", "2", "--method", "random", "--rate", "1000",
                 "--executors", "1", "--measure", "12", "--report", str(report_dir)])
    out = capsys.readouterr().out
    report = json.loads((report_dir / "report.json").read_text())
    app = manifest.load(HERE / "short.yaml")
    assert code == 0, out
    assert [t["number"] for t in report["trials"]] == [1, 2]
    assert report["trials"][0]["config"] == knobs.current(app.spec)  # the StreamApp's own configuration first
    for trial in report["trials"]:
        assert (trial["p99_s"] is None) != (trial["failed"] is None), trial
    default = report["trials"][0]
    assert default["p99_s"] is not None, default  # 1000 records/s on one executor keeps up (it carries ~3000/s)
    assert 0 < default["p99_s"] < 60
    assert report["best"]["p99_s"] <= default["p99_s"]
    assert report["best_vs_default"] == pytest.approx(default["p99_s"] / report["best"]["p99_s"], rel=1e-2)
    patch = yaml.safe_load((report_dir / "best-patch.yaml").read_text())
    assert knobs.current(knobs.apply(app.spec, report["best"]["config"])) == pytest.approx(report["best"]["config"], abs=1e-3)
    assert patch == knobs.patch(report["best"]["config"])
    assert (report_dir / "convergence.png").stat().st_size > 10_000
    assert "2/2 best" in out
    assert not processes_mentioning(str(tmp_path)), "tune left processes running"
