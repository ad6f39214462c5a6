"""The local mode's Nexmark source: a Kafka broker on this machine, the topic, and the producer writing the seeded
Nexmark events into it at the StreamApp's rate profile; and the check of a Nexmark query's sink against the batch
answer over everything it wrote (nexmark.reference)."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from elastream.api.streamapp import NexmarkSource
from kafka_broker.broker import LocalKafka
from elastream.engines.spark.runner_args import NEXMARK_TOPIC as TOPIC
from nexmark import reference
from nexmark import events as ev
from nexmark.producer import NexmarkProducer, event_times_ms
from spark_apps.profile import make_profile
from spark_apps.verify import committed_offsets, sink_batches


class NexmarkFeed:
    def __init__(self, source: NexmarkSource, workdir: Path, duration_s: float):
        self.source, self.workdir = source, Path(workdir)
        self.profile = make_profile(source.profile, source.rate, source.peak_rate, source.period, source.trace,
                                    duration=duration_s)
        self.broker: LocalKafka | None = None
        self.producer: NexmarkProducer | None = None

    def start(self) -> str:
        """Start the broker and create the topic; returns the bootstrap servers."""
        self.broker = LocalKafka(base_dir=self.workdir / "kafka").start()
        self.broker.create_topic(TOPIC, self.source.partitions)
        return self.broker.bootstrap_servers

    def begin(self) -> None:
        """Start offering events (the profile's time 0 is now)."""
        self.producer = NexmarkProducer(self.broker.bootstrap_servers, TOPIC, self.source.partitions, self.profile,
                                        self.source.seed, time.time_ns() // 1000, self.workdir / "producer.json")
        self.producer.start()

    def done(self) -> bool:
        """Every event of the profile sent and acknowledged (raises the producer's error, if it failed)."""
        if self.producer is not None and self.producer.error is not None:
            raise RuntimeError(f"the Nexmark producer failed: {self.producer.error}")
        return self.producer is not None and self.producer.done

    @staticmethod
    def waits_for_watermark(app: str) -> bool:
        """Whether the query's output waits for the watermark (q5's windows), so a batch without input must follow
        the last one with input before its output is complete."""
        return app == "nexmark-q5"

    def describe(self) -> str:
        return f"kafka {self.broker.bootstrap_servers} topic {TOPIC} ({self.source.partitions} partitions)"

    def verify(self, query: str, checkpoint: Path, sink: Path) -> dict[str, Any]:
        """The report's keys: events written, events the committed batches read, and the sink's rows against the
        batch answer over every event written (rows of events not read yet count as missing)."""
        sent = self.producer.sent if self.producer is not None else 0
        offsets = (committed_offsets(str(checkpoint)) or {}).get(TOPIC, {})
        read = sum(int(v) for v in offsets.values())
        n = np.arange(sent, dtype=np.int64)
        events = ev.generate(self.source.seed, n, event_times_ms(self.profile, self.producer.start_us, n)) \
            if sent else None
        rows = [r for _, batch in sink_batches(str(sink)) for r in batch]
        check = reference.check(query, events, rows) if events is not None else None
        return {"records_produced": sent, "records_processed": read,
                "missing": check.missing if check else 0, "duplicates": check.duplicates if check else 0,
                "unexpected_rows": check.unexpected if check else 0,
                "expected_rows": check.expected if check else 0,
                "exactly_once": bool(check and check.ok and read == sent),
                "verified": bool(check and check.ok and read == sent)}

    def stop(self) -> None:
        if self.producer is not None:
            self.producer.stop()
        if self.broker is not None:
            self.broker.stop()
            self.broker = None
