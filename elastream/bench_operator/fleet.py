"""The cluster side of `elastream bench operator`: a namespace of attached StreamApps whose jobs cannot be reached
(every evaluation is a cheap hold: the loop is what is measured), some of them behind an endpoint that hangs, and
the operator as one process watching that namespace."""
from __future__ import annotations

import base64
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import kubernetes
import requests
from kubernetes.client.rest import ApiException

from elastream.api import GROUP, VERSION
from spark_apps.cluster import free_port

OPERATOR = Path(__file__).resolve().parents[2] / "operator" / "main.py"
REFUSED_URL = "http://127.0.0.1:1"  # nothing listens: refused at once


@contextlib.contextmanager
def hanging_endpoint(hang_s: float) -> Iterator[str]:
    """An HTTP server on this machine that accepts and then answers nothing for hang_s seconds: a job or a
    Prometheus that is up but stuck. Yields its URL."""

    class Hang(BaseHTTPRequestHandler):
        def do_GET(self):
            time.sleep(hang_s)
            with contextlib.suppress(OSError):  # the client gave up long ago
                self.send_error(503)

        do_PUT = do_GET

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hang)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def app_name(i: int) -> str:
    return f"app-{i:04d}"


def policy(name: str, url: str, interval_s: float) -> dict[str, Any]:
    window = max(60, int(interval_s))
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ElasticityPolicy", "metadata": {"name": name},
            "spec": {"evaluationInterval": f"{interval_s:g}s", "metricsWindow": f"{window}s",
                     "metrics": {"prometheus": {"url": url}}}}


def stream_app(name: str, policy_name: str, control_url: str) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "StreamApp", "metadata": {"name": name},
            "spec": {"engine": "spark", "policyRef": {"name": policy_name},
                     "spark": {"application": {"builtin": "wordcount"},
                               "attach": {"controlURL": control_url, "tokenSecretRef": {"name": "bench-token"}}}}}


class Fleet:
    """N StreamApps in a namespace of their own; the first `slow` of them behind the hanging endpoint."""

    def __init__(self, api: kubernetes.client.ApiClient, apps: int, slow: int, interval_s: float, slow_url: str):
        self.api, self.apps, self.slow, self.interval_s, self.slow_url = api, apps, slow, interval_s, slow_url
        self.namespace = f"bench-operator-{uuid.uuid4().hex[:6]}"
        self.custom = kubernetes.client.CustomObjectsApi(api)
        self.core = kubernetes.client.CoreV1Api(api)

    def create(self) -> None:
        self.core.create_namespace({"metadata": {"name": self.namespace}})
        self.core.create_namespaced_secret(self.namespace, {"metadata": {"name": "bench-token"},
                                                            "data": {"token": base64.b64encode(b"bench").decode()}})
        for p in (policy("bench", REFUSED_URL, self.interval_s), policy("bench-slow", self.slow_url, self.interval_s)):
            self.custom.create_namespaced_custom_object(GROUP, VERSION, self.namespace, "elasticitypolicies", p)
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(self._create_app, range(self.apps)))

    def _create_app(self, i: int) -> None:
        slow = i < self.slow
        body = stream_app(app_name(i), "bench-slow" if slow else "bench", self.slow_url if slow else REFUSED_URL)
        self.custom.create_namespaced_custom_object(GROUP, VERSION, self.namespace, "streamapps", body)

    def statuses(self) -> dict[str, dict[str, Any]]:
        items = self.custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, "streamapps")["items"]
        return {i["metadata"]["name"]: i.get("status") or {} for i in items}

    def last_evaluations(self, statuses: dict[str, dict[str, Any]] | None = None) -> dict[str, float | None]:
        """app -> the time (epoch seconds) of its last evaluation as its status says (lastDecision), or None."""
        return {name: _epoch((status.get("lastDecision") or {}).get("time"))
                for name, status in (statuses if statuses is not None else self.statuses()).items()}

    @staticmethod
    def on_schedule(statuses: dict[str, dict[str, Any]]) -> int:
        """How many apps' OnSchedule condition is True."""
        return sum(1 for status in statuses.values() for c in status.get("conditions") or []
                   if c.get("type") == "OnSchedule" and c.get("status") == "True")

    def is_slow(self, name: str) -> bool:
        return int(name.rsplit("-", 1)[1]) < self.slow

    def delete(self) -> None:
        with contextlib.suppress(ApiException):
            self.core.delete_namespace(self.namespace)


def _epoch(rfc3339: str | None) -> float | None:
    return datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp() if rfc3339 else None


class OperatorProcess:
    """`kopf run --standalone --namespace NS operator/main.py` with its /metrics on a free port; its log in a file."""

    def __init__(self, namespace: str, log: Path, env: dict[str, str] | None = None):
        self.port = free_port()
        self.log = log
        environment = {**os.environ, **(env or {}), "ELASTREAM_METRICS_PORT": str(self.port)}
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "kopf", "run", "--standalone", "--namespace", namespace, str(OPERATOR)],
                stdout=out, stderr=subprocess.STDOUT, env=environment, start_new_session=True,
                cwd=OPERATOR.parents[1])

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise RuntimeError(f"the operator exited with {self.proc.returncode}; see {self.log}")

    def metrics(self) -> str:
        self.check_alive()
        return requests.get(f"http://127.0.0.1:{self.port}/metrics", timeout=10).text

    def usage(self) -> tuple[float, float, float]:
        """(RSS MB, peak RSS MB, CPU seconds so far) from /proc."""
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        kb = {line.split(":")[0]: float(line.split()[1]) for line in status.splitlines()
              if line.startswith(("VmRSS", "VmHWM"))}
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return kb["VmRSS"] / 1024, kb["VmHWM"] / 1024, cpu

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=20)
