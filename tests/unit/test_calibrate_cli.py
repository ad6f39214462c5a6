"""`elastream calibrate` on what is not a calibratable run: a clear error naming what is missing, never a traceback."""
import json
from pathlib import Path

from elastream.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_a_directory_that_is_no_run_report_is_named_with_the_file_it_lacks(tmp_path, capsys):
    assert main(["calibrate", str(EXAMPLES / "wordcount.yaml"), str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "is not the report of a local Spark run" in err and "report.json" in err


def test_a_storm_app_is_refused(tmp_path, capsys):
    assert main(["calibrate", str(EXAMPLES / "storm-wordcount.yaml"), str(tmp_path)]) == 2
    assert "calibration is for Spark apps" in capsys.readouterr().err


def test_a_report_from_before_the_epoch_was_kept_is_refused_naming_the_field(tmp_path, capsys):
    (tmp_path / "job" / "checkpoint").mkdir(parents=True)
    (tmp_path / "report.json").write_text(json.dumps({"rescales": []}))
    (tmp_path / "timeline.json").write_text("[]")
    (tmp_path / "job" / "progress.jsonl").write_text("")
    (tmp_path / "job" / "checkpoint" / "elastream-run.json").write_text(
        json.dumps({"source": {"type": "generator", "generator": {}}, "start_us": 0}))
    assert main(["calibrate", str(EXAMPLES / "wordcount.yaml"), str(tmp_path)]) == 2
    assert "started_epoch_s" in capsys.readouterr().err
