"""A Spark standalone cluster on this machine: one master and N workers, each a JVM started from the pip wheel.

The wheel has no sbin/start-master.sh, so the daemons are started with bin/spark-class in the foreground, each in a
process group of its own: stop() ends the group, which also takes the executor JVMs a worker launched.

    with LocalSparkCluster(workers=2) as cluster:
        ...  # run a driver against cluster.master_url
"""
from __future__ import annotations

import ctypes
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pyspark


def spark_home() -> str:
    return os.path.dirname(pyspark.__file__)


_HANDED_OUT: set[int] = set()
# above the fixed ports of the test cluster's daemons (kubelets 11251+, kube-proxy 10249/10256), below those kwokctl
# picks downwards from 32767 and the NodePort range (30000-32767)
_PORT_RANGE = (15000, 30000)


def _port_range() -> tuple[int, int]:
    """The range free_port() draws from, kept below the kernel's ephemeral range should that start lower."""
    try:
        ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral = 32768
    return _PORT_RANGE[0], min(_PORT_RANGE[1], ephemeral)


def free_port() -> int:
    """A port free right now, for a daemon that binds it later. Drawn at random below the kernel's ephemeral range:
    there the kernel never hands a port out by itself (an outgoing connection, a bind to port 0), which a port it
    picked could meet before the daemon binds it; never the same port twice in one process. A race with another
    process choosing ports the same way remains, over some 15,000 ports."""
    low, top = _port_range()
    for _ in range(200):
        port = random.randrange(low, top) if top > low + 1000 else 0  # an odd kernel range: the kernel picks
        if port in _HANDED_OUT:
            continue
        try:
            with socket.socket() as s:
                s.bind(("0.0.0.0", port))
                port = s.getsockname()[1]
        except OSError:
            continue
        _HANDED_OUT.add(port)
        return port
    raise OSError(f"no free port found in {low}-{top}")


def die_with_parent() -> None:
    """preexec_fn: SIGTERM this child when the process (thread) that started it dies, even by SIGKILL, so a
    crashed owner leaves no daemon behind (Linux PR_SET_PDEATHSIG; survives the exec into java)."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


def stop_group(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM the process group led by `proc`, SIGKILL it if anything is left after `grace` s; reap the leader."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            proc.poll()  # reap the leader so the group can vanish
            if not group_alive(proc.pid):
                break
            time.sleep(0.1)
        if not group_alive(proc.pid):
            break
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def stop_driver(proc: subprocess.Popen, grace: float = 30.0) -> None:
    """Ask a runner to stop (SIGTERM to the Python process only, so it can stop its query and SparkContext
    cleanly while its JVM still answers), then end whatever is left of its process group."""
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=grace)
    except (subprocess.TimeoutExpired, ProcessLookupError):
        pass
    stop_group(proc, grace=5.0)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


class LocalSparkCluster:
    """Standalone master + `workers` workers on 127.0.0.1, on free ports, logs and work dirs under `base_dir`.

    The daemons get SIGTERM if the thread that called start() dies, so call it from a long-lived thread."""

    def __init__(self, workers: int = 2, cores_per_worker: int = 1, memory: str = "1g",
                 base_dir: str | None = None, start_timeout: float = 120.0):
        if workers < 1 or cores_per_worker < 1:
            raise ValueError("need at least one worker with one core")
        self.workers, self.cores_per_worker, self.memory = workers, cores_per_worker, memory
        self.start_timeout = start_timeout
        self._own_base = base_dir is None
        self.base_dir = Path(base_dir or tempfile.mkdtemp(prefix="elastream-spark-"))
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.master_port = self.master_ui_port = 0
        self._procs: list[subprocess.Popen] = []

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    @property
    def master_ui_url(self) -> str:
        return f"http://127.0.0.1:{self.master_ui_port}"

    @property
    def max_executors(self) -> int:
        return self.workers * self.cores_per_worker

    def __enter__(self) -> "LocalSparkCluster":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> "LocalSparkCluster":
        """Start master and workers; return once all workers are ALIVE. On any failure everything is stopped.

        Every daemon binds port 0 and the master's ports are read from its log: a port picked free beforehand can
        be taken by another process before the JVM binds it (Spark then moves to the next port, and the UI we ask
        is someone else's)."""
        deadline = time.monotonic() + self.start_timeout
        log = self.base_dir / "master.log"
        logged_before = log.stat().st_size if log.exists() else 0  # a reused base_dir keeps an earlier run's log
        try:
            self._spawn("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                        "--port", "0", "--webui-port", "0")
            self.master_port, self.master_ui_port = self._master_ports(log, logged_before, deadline)
            for i in range(self.workers):
                work = self.base_dir / f"worker-{i}"
                work.mkdir(parents=True, exist_ok=True)
                self._spawn(f"worker-{i}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                            "--port", "0", "--webui-port", "0",
                            "--cores", str(self.cores_per_worker), "--memory", self.memory,
                            "--work-dir", str(work), self.master_url)
            self._wait_alive(deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, name: str, main_class: str, *args: str) -> None:
        log = open(self.base_dir / f"{name}.log", "ab")
        env = {**os.environ, "SPARK_HOME": spark_home(), "SPARK_LOG_DIR": str(self.base_dir),
               "SPARK_WORKER_DIR": str(self.base_dir)}
        cmd = [os.path.join(spark_home(), "bin", "spark-class"), main_class, *args]
        # own process group: stop() can end the daemon and every executor it forked
        self._procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                            start_new_session=True, preexec_fn=die_with_parent,
                                            cwd=self.base_dir))
        log.close()

    def state(self) -> dict:
        """The master's JSON status (workers, applications)."""
        with urllib.request.urlopen(f"{self.master_ui_url}/json/", timeout=5) as r:
            return json.load(r)

    def alive_workers(self) -> int:
        return sum(w.get("state") == "ALIVE" for w in self.state().get("workers", []))

    _BOUND = re.compile(rb"Successfully started service '(sparkMaster|MasterUI)' on port (\d+)")

    def _master_ports(self, log: Path, offset: int, deadline: float) -> tuple[int, int]:
        """(master port, master UI port) as the master logged them (past `offset` in its log) once bound."""
        while time.monotonic() < deadline:
            self._raise_if_exited()
            ports = {m[1]: int(m[2]) for m in self._BOUND.finditer(log.read_bytes()[offset:])}
            if len(ports) == 2:
                return ports[b"sparkMaster"], ports[b"MasterUI"]
            time.sleep(0.2)
        raise TimeoutError(f"the Spark master logged no bound ports after {self.start_timeout}s; "
                           f"logs in {self.base_dir}")

    def _raise_if_exited(self) -> None:
        for p in self._procs:
            if p.poll() is not None:
                raise RuntimeError(f"a Spark daemon exited with {p.returncode}; logs in {self.base_dir}")

    def _wait_alive(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            self._raise_if_exited()
            try:
                if self.alive_workers() == self.workers:
                    return
            except OSError:
                pass  # master not listening yet
            time.sleep(0.3)
        raise TimeoutError(f"{self.workers} workers not ALIVE after {self.start_timeout}s; logs in {self.base_dir}")

    def stop(self) -> None:
        """Stop workers (and their executors) first, then the master. Safe to call twice."""
        for proc in reversed(self._procs):
            stop_group(proc)
        self._procs.clear()
        if self._own_base:
            shutil.rmtree(self.base_dir, ignore_errors=True)
