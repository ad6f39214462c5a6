"""A real Storm cluster on this machine: ZooKeeper, Nimbus and N supervisors from Storm's Maven Central jars
(storm_apps.distribution), all on 127.0.0.1 and free ports, with logs and state under `base_dir`.

Like LocalSparkCluster, stop() ends every process it started (each daemon leads a process group that also holds the
workers and their Python components), and the daemons get SIGTERM if the thread that called start() dies.

Storm's daemons are fail-fast and expect to run under supervision (Storm's "Setting up a Storm cluster": "run them
under supervision"): a supervisor halts, for one, when two rebalances change a topology's conf seconds apart
(`Halting process: Error when processing an event`, a CancellationException in its slot's blob update). So once
started, the cluster watches its daemons and starts again one that exits, with the same conf and state, as
supervisord would, up to MAX_RESTARTS times each.
"""
from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from spark_apps.cluster import die_with_parent, free_port, stop_group
from storm_apps.distribution import SCHEDULER_CLASS, storm_home

ZOOKEEPER = "org.apache.storm.command.DevZookeeper"
NIMBUS = "org.apache.storm.daemon.nimbus.Nimbus"
SUPERVISOR = "org.apache.storm.daemon.supervisor.Supervisor"
MAX_RESTARTS = 5  # per daemon: past this, it stays down (a crash loop is a bug to see, not to hide)
WATCH_EVERY_S = 2.0


@dataclass
class Daemon:
    name: str
    proc: subprocess.Popen
    conf_file: Path
    main_class: str
    restarts: int = 0


class LocalStormCluster:
    def __init__(self, supervisors: int = 2, slots_per_supervisor: int = 3, base_dir: Path | str | None = None,
                 worker_heap: str = "256m", daemon_heap: str = "256m", plan_scheduler: bool = False):
        """plan_scheduler: Nimbus schedules with elastream's PlanScheduler (a topology's `elastream.placement.plan`
        conf places its executors; the rest goes to Storm's default scheduler)."""
        if supervisors < 1 or slots_per_supervisor < 1:
            raise ValueError("need at least one supervisor with one slot")
        self.supervisors, self.slots_per_supervisor = supervisors, slots_per_supervisor
        self.worker_heap, self.daemon_heap = worker_heap, daemon_heap
        self.plan_scheduler = plan_scheduler
        self.slots: dict[str, list[int]] = {}  # supervisor name -> its slot ports
        self._own_base = base_dir is None
        self.base_dir = Path(base_dir or tempfile.mkdtemp(prefix="elastream-storm-"))
        self.nimbus_host = "127.0.0.1"
        self.nimbus_port = self.zookeeper_port = 0
        self.daemons: list[Daemon] = []
        self._exited: list[subprocess.Popen] = []  # restarted daemons' old leaders: their groups may hold workers
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._watcher: threading.Thread | None = None
        self.storm_home: Path | None = None

    @property
    def log_dir(self) -> Path:
        return self.base_dir / "logs"

    @property
    def conf_file(self) -> Path:
        """The client's storm.yaml (Nimbus, ZooKeeper): for the Flux submitter and the CLI classes."""
        return self.base_dir / "conf" / "client.yaml"

    def start(self, timeout_s: float = 180.0) -> "LocalStormCluster":
        self.storm_home = storm_home()
        self._stopping.clear()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.zookeeper_port, self.nimbus_port = free_port(), free_port()
        try:
            self.conf_file.parent.mkdir(parents=True, exist_ok=True)
            self.conf_file.write_text(yaml.safe_dump(self._conf("client")))
            self._spawn("zookeeper", ZOOKEEPER, {"dev.zookeeper.path": str(self.base_dir / "zookeeper")})
            _wait_port(self.zookeeper_port, timeout_s, "ZooKeeper", self.log_dir)
            self._spawn("nimbus", NIMBUS, {"storm.scheduler": SCHEDULER_CLASS} if self.plan_scheduler else {})
            _wait_port(self.nimbus_port, timeout_s, "Nimbus", self.log_dir)
            for i in range(1, self.supervisors + 1):
                self.add_supervisor(i)
            self.wait_supervisors(self.supervisors, timeout_s)
        except BaseException:
            self.stop()
            raise
        self._watcher = threading.Thread(target=self._watch, args=(threading.current_thread(),),
                                         name="storm-daemon-watch", daemon=True)
        self._watcher.start()
        return self

    @property
    def restarts(self) -> dict[str, int]:
        """How many times each daemon was started again after it exited."""
        with self._lock:
            return {d.name: d.restarts for d in self.daemons if d.restarts}

    def _watch(self, owner: threading.Thread) -> None:
        """Restart exited daemons while `owner` (the thread that called start()) lives: when it dies, its daemons get
        SIGTERM (die_with_parent) and stay down; those this thread restarted get it as this thread ends."""
        while not self._stopping.wait(WATCH_EVERY_S) and owner.is_alive():
            with self._lock:
                for d in list(self.daemons):
                    if d.proc.poll() is not None and d.restarts < MAX_RESTARTS and not self._stopping.is_set():
                        self._restart(d)

    def _restart(self, d: Daemon) -> None:
        """Start `d` again from its conf file (same slots, same state: a supervisor keeps its id); call with the
        lock held."""
        with open(self.log_dir / f"{d.name}.out", "ab") as out:
            out.write(f"\nelastream: {d.name} exited with {d.proc.returncode}; starting it again\n".encode())
        self._exited.append(d.proc)
        d.proc = self._popen(d.name, d.main_class, d.conf_file)
        d.restarts += 1

    def add_supervisor(self, index: int | None = None) -> str:
        """Start one more supervisor with its own slots; returns its name (supervisor.scheduler.meta.name)."""
        index = index or 1 + sum(d.name.startswith("supervisor") for d in self.daemons)
        name = f"supervisor-{index}"
        self.slots[name] = [free_port() for _ in range(self.slots_per_supervisor)]
        self._spawn(name, SUPERVISOR, {
            "supervisor.slots.ports": self.slots[name],
            "supervisor.thrift.port": free_port(),
            "supervisor.scheduler.meta": {"name": name}})
        return name

    def node_of_port(self) -> dict[int, str]:
        """slot port -> supervisor name: every daemon here shares one host, so ports tell the supervisors apart."""
        return {port: name for name, ports in self.slots.items() for port in ports}

    def wait_supervisors(self, count: int, timeout_s: float = 120.0) -> None:
        """Until Nimbus knows `count` supervisors (through Thrift)."""
        from storm_apps.nimbus import NimbusClient, NimbusUnavailable

        client, deadline, seen = NimbusClient(self.nimbus_host, self.nimbus_port), time.monotonic() + timeout_s, 0
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                seen = len(client.cluster().supervisors)
                if seen >= count:
                    return
            except NimbusUnavailable:
                pass
            time.sleep(1.0)
        raise TimeoutError(f"Nimbus saw {seen} of {count} supervisors after {timeout_s:.0f}s; see {self.log_dir}")

    def _conf(self, daemon: str, extra: dict | None = None) -> dict:
        return {
            "storm.zookeeper.servers": ["127.0.0.1"], "storm.zookeeper.port": self.zookeeper_port,
            "nimbus.seeds": ["127.0.0.1"], "nimbus.thrift.port": self.nimbus_port,
            "storm.local.hostname": "127.0.0.1", "storm.local.dir": str(self.base_dir / "state" / daemon),
            "storm.log.dir": str(self.log_dir),
            "worker.childopts": f"-Xmx{self.worker_heap} -XX:+UseSerialGC",
            # stats every 10 s, counted exactly (the defaults: a minute old, and ×20 estimates)
            "executor.metrics.frequency.secs": 10, "topology.builtin.metrics.bucket.size.secs": 10,
            "topology.stats.sample.rate": 1.0, "nimbus.monitor.freq.secs": 5,
            "supervisor.monitor.frequency.secs": 3, "storm.health.check.dir": str(self.base_dir / "healthchecks"),
            **(extra or {}),
        }

    def _spawn(self, name: str, main_class: str, extra: dict) -> None:
        conf = self.base_dir / "conf" / f"{name}.yaml"
        conf.write_text(yaml.safe_dump(self._conf(name, extra)))
        proc = self._popen(name, main_class, conf)
        with self._lock:
            self.daemons.append(Daemon(name, proc, conf, main_class))

    def _popen(self, name: str, main_class: str, conf: Path) -> subprocess.Popen:
        h = self.storm_home
        cmd = ["java", "-server", f"-Xmx{self.daemon_heap}", "-XX:+UseSerialGC", f"-Ddaemon.name={name}",
               f"-Dstorm.home={h}", f"-Dstorm.log.dir={self.log_dir}", f"-Dstorm.conf.file={conf}",
               f"-Dlog4j.configurationFile={h / 'log4j2' / 'cluster.xml'}",
               "-cp", f"{h}/lib/*:{h}/extlib/*:{h}/conf", main_class]
        with open(self.log_dir / f"{name}.out", "ab") as out:
            return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=self.base_dir,
                                    start_new_session=True, preexec_fn=die_with_parent)

    def _check_alive(self) -> None:
        for d in self.daemons:
            if d.proc.poll() is not None:
                raise RuntimeError(f"Storm {d.name} exited with {d.proc.returncode}; see {self.log_dir}/{d.name}.out")

    def remove_supervisor(self, name: str) -> None:
        with self._lock:
            gone = [d for d in self.daemons if d.name == name]
            for d in gone:
                self.daemons.remove(d)
        for d in gone:
            stop_group(d.proc, grace=5.0)
        self.slots.pop(name, None)

    def stop(self) -> None:
        """Supervisors (and their workers) first, then Nimbus, then ZooKeeper. Safe to call twice."""
        self._stopping.set()
        if self._watcher is not None and self._watcher is not threading.current_thread():
            self._watcher.join()
        with self._lock:
            daemons, exited, self.daemons, self._exited = self.daemons, self._exited, [], []
        for proc in exited:  # a halted supervisor's workers outlive it in its group
            stop_group(proc, grace=5.0)
        for d in sorted(daemons, key=lambda d: ("supervisor" not in d.name, d.name != "nimbus")):
            stop_group(d.proc, grace=5.0)
        if self._own_base:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> "LocalStormCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _wait_port(port: int, timeout_s: float, what: str, logs: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as s:
            s.settimeout(1.0)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    raise TimeoutError(f"{what} did not listen on 127.0.0.1:{port} within {timeout_s:.0f}s; see {logs}")
