"""The user's own JAR application of examples/your-app/java, built as its user builds it (Maven)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import ROOT

JAR_NAME = "wordcount-1.0.jar"
MAIN_CLASS = "example.WordCount"


def build_wordcount_jar(workdir: Path) -> Path:
    """`mvn package` in a copy of examples/your-app/java under workdir; returns the jar."""
    source = workdir / "wordcount"
    shutil.copytree(ROOT / "examples" / "your-app" / "java", source, ignore=shutil.ignore_patterns("target"))
    proc = subprocess.run(["mvn", "-q", "-B", "package"], cwd=source, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return source / "target" / JAR_NAME
