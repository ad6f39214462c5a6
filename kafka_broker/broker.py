"""A real Kafka broker on 127.0.0.1: one process in KRaft combined mode (broker and controller, no ZooKeeper), its
log directory formatted with a fresh cluster id, on free ports, with data and logs under `base_dir`.

Like LocalSparkCluster and LocalStormCluster, stop() ends what start() began (the broker leads its process group),
and the broker gets SIGTERM if the thread that called start() dies.
"""
from __future__ import annotations

import base64
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_broker.distribution import kafka_home
from spark_apps.cluster import die_with_parent, free_port, stop_group

STORAGE_TOOL = "kafka.tools.StorageTool"
BROKER = "kafka.Kafka"


class LocalKafka:
    def __init__(self, base_dir: Path | str | None = None, heap: str = "512m"):
        self._own_base = base_dir is None
        self.base_dir = Path(base_dir or tempfile.mkdtemp(prefix="elastream-kafka-"))
        self.heap = heap
        self.port = self.controller_port = 0
        self.proc: subprocess.Popen | None = None
        self._admin: AdminClient | None = None
        self.home: Path | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_dir(self) -> Path:
        return self.base_dir / "logs"

    def start(self, timeout_s: float = 120.0) -> "LocalKafka":
        self.home = kafka_home()
        self.port, self.controller_port = free_port(), free_port()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        conf = self.base_dir / "server.properties"
        conf.write_text(self._properties())
        try:
            self._java(STORAGE_TOOL, "format", "-t", cluster_id(), "-c", str(conf), wait=True)
            self.proc = self._java(BROKER, str(conf))
            self._wait_ready(timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def _properties(self) -> str:
        return server_properties(listen_host="127.0.0.1", advertised_host="127.0.0.1", port=self.port,
                                 controller_port=self.controller_port, data_dir=str(self.base_dir / "data"))

    def _java(self, main_class: str, *args: str, wait: bool = False) -> subprocess.Popen:
        h = self.home
        cmd = ["java", f"-Xmx{self.heap}", "-XX:+UseSerialGC", f"-Dkafka.logs.dir={self.log_dir}",
               f"-Dlog4j2.configurationFile={h / 'log4j2.xml'}", "-cp", f"{h}/lib/*", main_class, *args]
        name = "format" if wait else "kafka"
        with open(self.log_dir / f"{name}.out", "ab") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=self.base_dir,
                                    start_new_session=True, preexec_fn=die_with_parent)
        if wait and proc.wait(timeout=120) != 0:
            tail = (self.log_dir / "format.out").read_text(errors="replace").strip().splitlines()[-5:]
            raise RuntimeError(f"formatting Kafka's log directory failed ({self.log_dir / 'format.out'}): "
                               + " | ".join(tail))
        return proc

    def _wait_ready(self, timeout_s: float) -> None:
        """Until the broker answers a metadata request (it listens before its controller has elected itself)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"Kafka exited with {self.proc.returncode}; see {self.log_dir / 'kafka.out'}")
            if _listening(self.port):
                try:
                    if self.admin().list_topics(timeout=2.0).brokers:
                        return
                except KafkaException:
                    pass
            time.sleep(0.5)
        raise TimeoutError(f"Kafka did not answer on {self.bootstrap_servers} within {timeout_s:.0f}s; "
                           f"see {self.log_dir}")

    def admin(self) -> AdminClient:
        """An admin client of this broker (kept: a client dropped before its futures resolve cancels them)."""
        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 2})
        return self._admin

    def create_topic(self, name: str, partitions: int, timeout_s: float = 30.0,
                     config: dict[str, str] | None = None) -> None:
        create_topic(self.admin(), name, partitions, timeout_s, config)

    def stop(self) -> None:
        """End the broker (and everything in its group). Safe to call twice."""
        self._admin = None
        if self.proc is not None:
            stop_group(self.proc, grace=10.0)
            self.proc = None
        if self._own_base:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> "LocalKafka":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def create_topic(admin: AdminClient, name: str, partitions: int, timeout_s: float = 30.0,
                 config: dict[str, str] | None = None) -> None:
    """Create `name` with `partitions` partitions (one replica); a topic already there is left as it is. Records are
    kept for the broker's life by default (retention.ms=-1): replayed runs and event times in the past (a
    generator's) must not be deleted by the 7-day retention."""
    topic = NewTopic(name, num_partitions=partitions, replication_factor=1,
                     config={"retention.ms": "-1", **(config or {})})
    futures = admin.create_topics([topic], request_timeout=timeout_s)
    try:
        futures[name].result(timeout=timeout_s)
    except KafkaException as err:
        if err.args[0].name() != "TOPIC_ALREADY_EXISTS":
            raise


def server_properties(listen_host: str, advertised_host: str, port: int, controller_port: int, data_dir: str) -> str:
    """The server.properties of a one-node KRaft cluster (broker and controller in one process; the controller on
    loopback only): clients connect to listen_host:port and are told advertised_host:port."""
    props = {
        "process.roles": "broker,controller", "node.id": 1,
        "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://{listen_host}:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{advertised_host}:{port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": data_dir, "num.partitions": 1,
        # one broker: internal topics with one replica, and consumer groups that form at once
        "offsets.topic.replication.factor": 1, "transaction.state.log.replication.factor": 1,
        "transaction.state.log.min.isr": 1, "share.coordinator.state.topic.replication.factor": 1,
        "share.coordinator.state.topic.min.isr": 1, "group.initial.rebalance.delay.ms": 0,
    }
    return "".join(f"{k}={v}\n" for k, v in props.items())


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


def cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (as `kafka-storage random-uuid`). Never
    one that starts with '-', which the storage tool would read as an option (1 in 64 did: Kafka's Uuid redraws
    those too)."""
    while (drawn := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")).startswith("-"):
        pass
    return drawn
