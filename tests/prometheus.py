"""A real Prometheus server (Debian's package, installed by scripts/ensure-prometheus) for tests."""
from __future__ import annotations

import json
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

from spark_apps.cluster import free_port, stop_group

ROOT = Path(__file__).resolve().parent.parent


def prometheus_binary() -> str:
    out = subprocess.run([str(ROOT / "scripts" / "ensure-prometheus")], capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"scripts/ensure-prometheus failed:\n{out.stderr}")
    return out.stdout.strip().splitlines()[-1]


class PrometheusServer:
    """Scrapes `targets` (host:port) every `scrape_interval`; stop() and start() again keep port and data."""

    def __init__(self, targets: list[str], workdir: Path, scrape_interval: str = "1s"):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.config = self.workdir / "prometheus.yml"
        self.config.write_text(json.dumps({  # JSON is YAML
            "global": {"scrape_interval": scrape_interval, "evaluation_interval": scrape_interval},
            "scrape_configs": [{"job_name": "elastream", "static_configs": [{"targets": targets}]}],
        }))
        self.binary = prometheus_binary()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> "PrometheusServer":
        with open(self.workdir / "prometheus.log", "ab") as log:
            self.proc = subprocess.Popen(
                [self.binary, f"--config.file={self.config}", f"--storage.tsdb.path={self.workdir / 'tsdb'}",
                 f"--web.listen-address=127.0.0.1:{self.port}"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
        raise TimeoutError(f"Prometheus not ready after {timeout}s; see {self.workdir / 'prometheus.log'}")

    def stop(self) -> None:
        if self.proc is not None:
            stop_group(self.proc)
            self.proc = None

    def query(self, promql: str) -> list:
        url = f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(url, timeout=10) as r:
            doc = json.load(r)
        assert doc["status"] == "success", doc
        return doc["data"]["result"]
