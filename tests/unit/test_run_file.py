"""The run file: a new run's load starts when its first session is up (not at the runner's start), once."""
import json

import pytest

from spark_apps.runner import RUN_FILE, load_or_create_run, start_load_clock
from spark_apps.source import GeneratorConfig, SourceConfig

SOURCE = SourceConfig(generator=GeneratorConfig("step", 100.0, 300.0, "30s"))


def test_a_new_run_has_no_load_until_its_clock_starts(tmp_path):
    run = load_or_create_run(str(tmp_path), "wordcount", SOURCE, 10.0)
    assert "start_us" not in run and not (tmp_path / RUN_FILE).exists()
    start_load_clock(str(tmp_path), run)
    assert json.loads((tmp_path / RUN_FILE).read_text())["start_us"] == run["start_us"] > 0


def test_a_restart_keeps_the_first_start(tmp_path):
    first = load_or_create_run(str(tmp_path), "wordcount", SOURCE, 10.0)
    start_load_clock(str(tmp_path), first)
    again = load_or_create_run(str(tmp_path), "wordcount", SOURCE, 10.0)
    start_load_clock(str(tmp_path), again)  # a restarted session replays the same load
    assert again["start_us"] == first["start_us"]
    assert json.loads((tmp_path / RUN_FILE).read_text())["start_us"] == first["start_us"]


def test_another_app_on_the_checkpoint_is_refused(tmp_path):
    start_load_clock(str(tmp_path), load_or_create_run(str(tmp_path), "wordcount", SOURCE, 10.0))
    with pytest.raises(SystemExit, match="different app"):
        load_or_create_run(str(tmp_path), "identity", SOURCE, 10.0)
