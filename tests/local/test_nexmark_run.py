"""`elastream run` of a Nexmark query for real: the run starts a Kafka broker and the Nexmark producer, the runner
reads the topic through the Kafka source (--source kafka), the policy evaluates the q5 job, the run ends when
the lag the runner reports drains to 0, and the sink holds exactly the batch answer over every event written;
nothing is left running."""
import json
from pathlib import Path

import pytest

from elastream.cli import main
from spark_apps.metrics import source_partitions
from tests.local.test_local_run import processes_mentioning

HERE = Path(__file__).parent
pytestmark = pytest.mark.slow


def test_nexmark_q5_runs_on_kafka_and_matches_its_batch_answer(tmp_path, capsys):
    report_dir = tmp_path / "report"
    assert main(["run", str(HERE / "nexmark-short.yaml"), "--duration", "60", "--report", str(report_dir)]) == 0
    log = capsys.readouterr().out
    report = json.loads((report_dir / "report.json").read_text())
    assert report["records_produced"] > 60_000 and report["records_processed"] == report["records_produced"]
    assert report["missing"] == report["duplicates"] == 0 and report["exactly_once"] and report["drained"], report
    assert report["decisions"], report  # the policy evaluated the job (whether it rescales is the policy's call:
    # one executor may carry this step, see docs/benchmarks.md, Spark; the word count's local run tests scaling)
    assert "kafka 127.0.0.1:" in log and "topic nexmark (4 partitions)" in log
    assert processes_mentioning(str(report_dir)) == []
    progress = [json.loads(line) for line in (report_dir / "job" / "progress.jsonl").read_text().splitlines()]
    assert {source_partitions(p["latest_offsets"]) for p in progress} == {4}  # what elastream_source_partitions says
    backlog = [s["backlog"] for s in json.loads((report_dir / "timeline.json").read_text()) if s["backlog"] is not None]
    assert max(backlog) > 0 and backlog[-1] == 0  # the lag grew under the step and drained
