"""Writes the Nexmark stream to a Kafka topic as a rate profile offers it: event n is sent once the profile has
offered n + 1 events, stamped with the event time at which it was offered, to partition n mod P. Everything it
writes is a function of (seed, profile, start time), so a run can be replayed, and checked, from those alone.

The producer is idempotent (librdkafka's enable.idempotence): a retried send is not written twice.
"""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
from confluent_kafka import KafkaException, Producer

from nexmark import events
from spark_apps.profile import RateProfile

CHUNK = 5_000  # events generated and handed to librdkafka at a time
TICK_S = 0.05


def event_times_ms(profile: RateProfile, start_us: int, n: np.ndarray) -> np.ndarray:
    """Event time (epoch ms) of events n: when the profile offered them."""
    return (start_us + np.floor(profile.offer_time(n) * 1e6).astype(np.int64)) // 1000


class NexmarkProducer:
    def __init__(self, servers: str, topic: str, partitions: int, profile: RateProfile, seed: int, start_us: int,
                 state_file: Path | None = None):
        """state_file: where the count sent (and, once the profile ends, the total) is written as JSON."""
        self.topic, self.partitions, self.profile = topic, partitions, profile
        self.seed, self.start_us, self.state_file = seed, start_us, state_file
        self.sent = 0
        self.error: BaseException | None = None
        self._producer = Producer({"bootstrap.servers": servers, "enable.idempotence": True, "linger.ms": 20,
                                   "log_level": 2})
        self._stop = threading.Event()
        self._finished = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def done(self) -> bool:
        """Whether every event of a profile with a duration has been sent and acknowledged."""
        return self._finished.is_set()

    def offered(self) -> int:
        return self.profile.offered_count(time.time() - self.start_us / 1e6)

    def send_until(self, count: int) -> None:
        """Send events [sent, count)."""
        while self.sent < count:
            n = np.arange(self.sent, min(count, self.sent + CHUNK), dtype=np.int64)
            times = event_times_ms(self.profile, self.start_us, n)
            for i, value, t in zip(n.tolist(), self.values(n, times), times.tolist()):
                self._send(value, i % self.partitions, t)
            self.sent = int(n[-1]) + 1
            self._producer.poll(0)

    def values(self, n: np.ndarray, times_ms: np.ndarray) -> list[bytes]:
        """The records numbered n, offered at times_ms: Nexmark's events as JSON (a subclass writes others)."""
        return events.to_json(events.generate(self.seed, n, times_ms))

    def flush(self, timeout_s: float = 30.0) -> None:
        """Until everything sent is acknowledged by the broker (raises the first delivery error)."""
        if self._producer.flush(timeout_s) > 0:
            raise TimeoutError(f"Kafka did not acknowledge every event within {timeout_s:.0f}s")
        if self.error is not None:
            raise self.error

    def _send(self, value: bytes, partition: int, t: int) -> None:
        while True:
            try:
                self._producer.produce(self.topic, value=value, partition=partition, timestamp=t,
                                       on_delivery=self._delivered)
                return
            except BufferError:  # librdkafka's queue is full: let it drain
                self._producer.poll(0.1)

    def _delivered(self, err, _msg) -> None:
        if err is not None and self.error is None:
            self.error = KafkaException(err)

    def run(self) -> int:
        """Send as the profile offers until it ends (or stop()); flush; return the count sent."""
        total = self.profile.total()
        while not self._stop.is_set() and (total is None or self.sent < total):
            self.send_until(self.offered())
            self._write_state(done=False)
            if self.error is not None:
                raise self.error
            self._stop.wait(TICK_S)
        self._producer.flush(30.0)
        if self.error is not None:
            raise self.error
        complete = total is not None and self.sent >= total
        self._write_state(done=complete)
        if complete:
            self._finished.set()
        return self.sent

    def _write_state(self, done: bool) -> None:
        if self.state_file is None:
            return
        state = {"seed": self.seed, "start_us": self.start_us, "sent": self.sent, "total": self.sent if done else None}
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state))
        tmp.replace(self.state_file)

    def start(self) -> "NexmarkProducer":
        """run() in a background thread."""
        def target():
            try:
                self.run()
            except BaseException as err:  # noqa: BLE001 - kept for the owner to see
                self.error = err

        self._thread = threading.Thread(target=target, name="nexmark-producer", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 30.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
