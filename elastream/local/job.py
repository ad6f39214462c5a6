"""The processes of one local run: a standalone Spark cluster and the spark_apps runner (the driver).

stop() ends them all — also after Ctrl-C or an error — so a second run finds no process or port in its way.
"""
from __future__ import annotations

import secrets
import subprocess
import sys
import time
from pathlib import Path

import requests

from elastream.local.manifest import LocalApp
from elastream.runner_args import runner_args
from spark_apps.cluster import LocalSparkCluster, free_port, stop_driver


class LocalJob:
    def __init__(self, app: LocalApp, workdir: Path, duration_s: float):
        self.app, self.workdir, self.duration_s = app, Path(workdir), duration_s
        self.token = secrets.token_urlsafe(24)
        self.metrics_port = self.control_port = 0
        self.cluster: LocalSparkCluster | None = None
        self.runner: subprocess.Popen | None = None

    @property
    def checkpoint(self) -> Path:
        return self.workdir / "checkpoint"

    @property
    def sink(self) -> Path:
        return self.workdir / "sink"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    @property
    def control_url(self) -> str:
        return f"http://127.0.0.1:{self.control_port}"

    def start(self, ready_timeout_s: float = 240.0) -> "LocalJob":
        spark = self.app.spec.spark
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self.cluster = LocalSparkCluster(workers=spark.executors.max, cores_per_worker=spark.executor.cores,
                                             memory=spark.executor.memory, base_dir=str(self.workdir / "spark"))
            self.cluster.start()
            self.metrics_port, self.control_port = free_port(), free_port()
            token_file = self.workdir / "token"
            token_file.write_text(self.token)
            token_file.chmod(0o600)
            log = open(self.workdir / "runner.log", "ab")
            self.runner = subprocess.Popen([sys.executable, "-m", "spark_apps.runner", *self.runner_args(token_file)],
                                           stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            log.close()
            self._wait_ready(ready_timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def runner_args(self, token_file: Path) -> list[str]:
        return runner_args(self.app.name, self.app.spec, master=self.cluster.master_url,
                           checkpoint=str(self.checkpoint), sink=str(self.sink), metrics_port=self.metrics_port,
                           control_port=self.control_port, token_file=str(token_file), bind_address="127.0.0.1",
                           duration_s=self.duration_s, progress_log=str(self.workdir / "progress.jsonl"))

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.runner.poll() is not None:
                raise RuntimeError(f"the runner exited with {self.runner.returncode}; see {self.workdir / 'runner.log'}")
            try:
                if requests.get(f"{self.control_url}/healthz", timeout=2).ok:
                    requests.get(self.metrics_url, timeout=2).raise_for_status()
                    return
            except requests.RequestException:
                pass
            time.sleep(0.5)
        raise TimeoutError(f"the runner was not ready after {timeout_s:.0f}s; see {self.workdir / 'runner.log'}")

    def finished(self) -> bool:
        return self.runner is not None and self.runner.poll() is not None

    def stop(self) -> None:
        """Stop the driver (gracefully: the query commits what it has), then the cluster. Safe to call twice."""
        if self.runner is not None:
            stop_driver(self.runner)
            self.runner = None
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None
