"""The Spark plugin's Java unit tests (spark_apps/plugin/src/test: the executor pool's rules over a fake cluster, the
control API's answers and token rules, the progress JSON read into metrics), run by Maven as part of the suite. The
plugin inside a real driver is exercised by tests/local/test_your_app.py."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def test_the_plugins_java_unit_tests_pass(tmp_path):
    module = tmp_path / "plugin"
    shutil.copytree(ROOT / "spark_apps" / "plugin", module, ignore=shutil.ignore_patterns("target"))
    proc = subprocess.run(["mvn", "-q", "-B", "test"], cwd=module, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    counts = [tuple(int(n) for n in m) for report in (module / "target" / "surefire-reports").glob("*.txt")
              for m in re.findall(r"Tests run: (\d+), Failures: (\d+), Errors: (\d+)", report.read_text())]
    assert sum(c[0] for c in counts) >= 15 and all(c[1] == c[2] == 0 for c in counts), counts
