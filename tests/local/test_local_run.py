"""`elastream run` for real: a PySpark job on a local cluster scales out under the step and back in after it,
every record is counted exactly once, and nothing is left running — also after Ctrl-C."""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from elastream.cli import main

HERE = Path(__file__).parent
pytestmark = pytest.mark.slow


def processes_mentioning(text: str) -> list[str]:
    """Processes (pid and command) whose command line or working directory mentions `text` (the run's directory)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if int(pid) != os.getpid() and (text in cmd or cwd.startswith(text)):
            found.append(f"{pid}: {cmd[:200]}")
    return found


def test_short_run_scales_out_and_in_exactly_once(tmp_path, capsys):
    report_dir = tmp_path / "report"
    assert main(["run", str(HERE / "short.yaml"), "--duration", "150", "--report", str(report_dir)]) == 0
    log = capsys.readouterr().out
    report = json.loads((report_dir / "report.json").read_text())
    assert report["records_produced"] > 100_000
    assert report["records_processed"] == report["records_produced"] and report["duplicates"] == 0
    assert report["drained"] and report["interrupted"] is False
    ups = [r for r in report["rescales"] if r["to"] > r["from"]]
    downs = [r for r in report["rescales"] if r["to"] < r["from"] and r["t"] > ups[0]["t"]] if ups else []
    assert ups, f"no scale-out: {report['decisions']}"
    assert downs, f"no scale-in after the step: {report['decisions']}"
    for r in report["rescales"]:  # the report matches the log
        assert f"decision at {r['t']:.0f}s: {r['reason']}" in log
    assert f"done: {report['records_processed']} of {report['records_produced']} records processed" in log
    assert (report_dir / "timeline.png").stat().st_size > 10_000
    assert processes_mentioning(str(report_dir)) == []
    simulator_calibrated_to_the_run(report_dir, capsys)


def simulator_calibrated_to_the_run(report_dir: Path, capsys) -> None:
    """`elastream calibrate` fits the simulator to this run and its replay behaves like the run."""
    assert main(["calibrate", str(HERE / "short.yaml"), str(report_dir), "--json", str(report_dir / "cal.json")]) == 0
    out = capsys.readouterr().out
    result = json.loads((report_dir / "cal.json").read_text())
    fitted, compared = result["fitted"], result["comparison"]
    assert 1000 < fitted["service_rate"] < 8000, out  # recordCost 250 µs: at most 4000/s an executor, less with Python
    assert "provision_s" not in fitted["defaulted"] and 0 < fitted["provision_s"] < 60, out  # an executor JVM starts
    assert compared["first scale-out at"]["simulated"] != "-", out  # the replay scales out under the step too
    real, simulated = (float(compared["executor-seconds"][k]) for k in ("real", "simulated"))
    assert abs(simulated / real - 1) < 0.35, out  # measured 190 / 191, and 183 / 178 beside 4 CPU hogs
    assert (report_dir / "calibration.png").stat().st_size > 10_000


def test_ctrl_c_leaves_nothing_running(tmp_path):
    report_dir = tmp_path / "report"
    proc = subprocess.Popen([sys.executable, "-m", "elastream.cli", "run", str(HERE / "short.yaml"), "--duration", "600",
                             "--report", str(report_dir)], stdout=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 300
    for line in proc.stdout:  # wait until the job runs and reports metrics
        if re.match(r"\s+\d+s\s+in\s+\d", line) or time.monotonic() > deadline:  # a progress line with a rate
            break
    assert processes_mentioning(str(report_dir)), "the job should be running"
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, rest
    assert "interrupted: stopping the job" in rest
    report = json.loads((report_dir / "report.json").read_text())
    assert report["interrupted"] is True and report["duplicates"] == 0
    assert processes_mentioning(str(report_dir)) == []
