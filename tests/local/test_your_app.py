"""`elastream run` of a user's own Spark application, for real and unmodified: examples/your-app/wordcount.py reads
Kafka through Spark's own connector, keeps a count per word and writes the counts to another topic; it imports
nothing from elastream. spark-submit starts it with elastream's Spark plugin and the connector on the classpath, the
policy reads the plugin's metrics and rescales the executors through the plugin's control endpoint: the job scales
out under the step, in the same driver, and reads every line written; nothing is left running."""
import json
from pathlib import Path

import pytest

from elastream.cli import main
from tests.conftest import ROOT
from tests.local.test_local_run import processes_mentioning

HERE = Path(__file__).parent
pytestmark = pytest.mark.slow


def test_the_users_own_application_scales_out_in_place_and_reads_every_line(tmp_path, capsys):
    assert "elastream" not in (ROOT / "examples" / "your-app" / "wordcount.py").read_text().split('"""')[2]
    report_dir = tmp_path / "report"
    assert main(["run", str(HERE / "your-app-short.yaml"), "--duration", "135", "--report", str(report_dir)]) == 0
    log = capsys.readouterr().out
    report = json.loads((report_dir / "report.json").read_text())
    assert "elastream's plugin" in log and "topic lines" in log
    ups = [r for r in report["rescales"] if r["to"] > r["from"]]
    assert ups, report["decisions"]  # one executor cannot carry the step
    assert report["drained"] and report["records_produced"] > 20_000, report
    assert report["records_processed"] == report["records_produced"] and report["verified"], report
    driver_log = (report_dir / "job" / "driver.log").read_text()
    assert "elastream: metrics on 127.0.0.1:" in driver_log and "control on 127.0.0.1:" in driver_log
    # in place: one driver all along (one SparkContext), its executors added and decommissioned in it
    assert driver_log.count("Successfully started service 'sparkDriver'") == 1, driver_log[-3000:]
    assert processes_mentioning(str(report_dir)) == []
