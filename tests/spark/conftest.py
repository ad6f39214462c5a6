"""Real PySpark integration tests: one standalone cluster (master + 2 workers, separate JVMs) per session, runners
started as `python -m spark_apps.runner` subprocesses, every process stopped at the end."""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from spark_apps import verify
from spark_apps.cluster import LocalSparkCluster, die_with_parent, free_port, stop_driver

ROOT = Path(__file__).resolve().parents[2]
# CPU is shared (2 cores): generous limits, but every wait is on a condition
START_TIMEOUT = 180.0


def wait_for(cond, timeout: float, what: str, every: float = 0.25):
    """Poll cond() until it returns something truthy; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last_err = None
    while time.monotonic() < deadline:
        try:
            value = cond()
            if value:
                return value
        except (OSError, ValueError, KeyError) as err:  # endpoint not up yet, file half-written
            last_err = err
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last error: {last_err})")


@dataclass
class Runner:
    """A runner subprocess and its endpoints."""

    proc: subprocess.Popen
    app: str
    metrics_port: int
    control_port: int
    token: str
    checkpoint: str
    sink: str
    progress_log: str
    log_path: str
    argv: list[str] = field(default_factory=list)

    def call(self, method: str, path: str, body=None, token: str | None = "default", raw: bytes | None = None):
        """(status, json) of a control call; token=None sends no Authorization header."""
        headers = {"Content-Type": "application/json"}
        tok = self.token if token == "default" else token
        if tok is not None:
            headers["Authorization"] = f"Bearer {tok}"
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(f"http://127.0.0.1:{self.control_port}{path}", data=data, method=method,
                                     headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as err:
            return err.code, json.load(err)

    def executors(self) -> dict:
        status, doc = self.call("GET", "/executors")
        assert status == 200, doc
        return doc

    def scale(self, n: int) -> float:
        """PUT the target, wait until exactly n executors are registered and none is draining; seconds taken."""
        began = time.monotonic()
        status, doc = self.call("PUT", "/executors", {"target": n})
        assert status == 200, doc
        assert doc["target"] == n
        wait_for(lambda: (lambda s: s["current"] == n and s["draining"] == 0)(self.executors()), 120,
                 f"{n} executors")
        return time.monotonic() - began

    def progress(self) -> list[dict]:
        if not os.path.exists(self.progress_log):
            return []
        with open(self.progress_log) as f:
            return [json.loads(line) for line in f if line.endswith("\n")]

    def batches_done(self) -> int:
        return len(self.progress())

    def wait_batches(self, more: int, timeout: float = 120) -> None:
        """Wait until `more` further micro-batches (with input rows) have completed."""
        base = sum(1 for p in self.progress() if p["rows"] > 0)
        wait_for(lambda: sum(1 for p in self.progress() if p["rows"] > 0) >= base + more, timeout,
                 f"{more} more batches of {self.app}")

    def metrics_text(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10) as r:
            return r.read().decode()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, n: int = 4000) -> str:
        return Path(self.log_path).read_text(errors="replace")[-n:]

    def verify_when_drained(self, timeout: float = 180) -> verify.Report:
        """Wait until the sink accounts for every offered record (or the timeout), then return the check."""
        try:
            return wait_for(lambda: (lambda r: r if r.missing == 0 else None)(verify.check(self.checkpoint, self.sink)),
                            timeout, "the sink to hold every offered record")
        except AssertionError:
            report = verify.check(self.checkpoint, self.sink)
            raise AssertionError(f"not drained: {report}\n{self.log_tail()}") from None


@pytest.fixture(scope="session")
def work_dir():
    """Our own scratch root: pytest's basetemp rotation (other pytest sessions on this machine) must not delete a
    checkpoint under a running job. Removed at the end unless ELASTREAM_KEEP_SPARK_TMP=1."""
    root = Path(tempfile.mkdtemp(prefix="elastream-spark-tests-"))
    yield root
    if os.environ.get("ELASTREAM_KEEP_SPARK_TMP") != "1":
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def test_dir(work_dir, request) -> Path:
    d = work_dir / re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)[:80]
    d.mkdir()
    return d


@pytest.fixture(scope="session")
def spark_cluster(work_dir):
    """Standalone master + 2 one-core workers; max 2 executors (the machine has 2 cores)."""
    with LocalSparkCluster(workers=2, cores_per_worker=1, memory="1g", base_dir=str(work_dir / "cluster")) as cluster:
        yield cluster


def _start(tmp: Path, app: str, master: str, args: list[str], checkpoint: Path | None = None,
           sink: Path | None = None, token: str | None = None, name: str | None = None) -> Runner:
    tmp.mkdir(parents=True, exist_ok=True)
    token = token or secrets.token_hex(16)
    token_file = tmp / "token"
    token_file.write_text(token + "\n")
    checkpoint = checkpoint or tmp / "checkpoint"
    sink = sink or tmp / "sink"
    metrics_port, control_port = free_port(), free_port()
    progress = tmp / "progress.jsonl"
    log_path = tmp / f"runner-{int(time.time() * 1000)}.log"
    argv = [sys.executable, "-m", "spark_apps.runner", "--app", app, "--master", master,
            "--checkpoint", str(checkpoint), "--sink", str(sink), "--metrics-port", str(metrics_port),
            "--control-port", str(control_port), "--token-file", str(token_file), "--bind-address", "127.0.0.1",
            "--progress-log", str(progress), "--shuffle-partitions", "4", "--source-partitions", "2",
            "--name", name or app, *args]
    with open(log_path, "wb") as log:
        # own process group: a test can kill the driver (Python + its JVM) like a crashed pod
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True,
                                preexec_fn=die_with_parent)  # a killed pytest leaves no driver behind
    runner = Runner(proc, app, metrics_port, control_port, token, str(checkpoint), str(sink), str(progress),
                    str(log_path), argv)
    try:
        wait_for(lambda: runner.alive() and runner.call("GET", "/healthz", token=None)[0] == 200, 60,
                 "the control endpoint")
    except AssertionError:
        stop_driver(proc)
        raise AssertionError(f"runner did not come up:\n{runner.log_tail()}") from None
    return runner


@pytest.fixture
def start_runner(test_dir):
    """start_runner(app, master, args, ...) -> Runner; every runner is stopped (process group gone) afterwards."""
    started: list[Runner] = []

    def start(app: str, master: str, args: list[str], sub: str = "run", **kw) -> Runner:
        runner = _start(test_dir / sub, app, master, args, **kw)
        started.append(runner)
        return runner

    yield start
    for r in started:
        stop_driver(r.proc)
