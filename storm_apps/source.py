"""The spout's replayable source: records numbered 0, 1, 2, ... offered on a load profile (spark_apps.profile, the
same profiles as the Spark generator), emitted with their number as the message id, and committed on ack.

Storm replays a failed tuple only while the spout that emitted it lives: tuples in flight when a rebalance restarts
the spout's worker are never acked nor failed. So the source keeps its own offsets in `source.json` (written
atomically): every record below `committed` is acked, `acked_above` holds the acks past it. A restarted spout
replays every record between `committed` and `next_seq` that was not acked: nothing is lost; a record acked after the
last write is replayed and shows up as a duplicate, which the verifier counts.

Pure logic (no Storm): storm_apps/resources/elastream_spout.py wires it to Storm's multilang protocol.
"""
from __future__ import annotations

import json
import os
import random
from collections import deque
from pathlib import Path

STATE_FILE = "source.json"
WORDS = ("storm", "spark", "stream", "scale", "elastic", "bolt", "spout", "tuple", "worker", "nimbus", "latency",
         "rate", "queue", "window", "state", "replay", "offset", "ack", "task", "slot")
HOT_WORD = WORDS[0]


def sentence(seq: int, hot_word_share: float = 0.0) -> str:
    """Record `seq`'s payload: 3 to 6 words, the same on every replay; each is `HOT_WORD` with probability
    hot_word_share, else any of `WORDS` alike (a hot key for a fields grouping on the word)."""
    rng = random.Random(seq)
    n = rng.randint(3, 6)
    if hot_word_share <= 0:
        return " ".join(rng.choice(WORDS) for _ in range(n))
    return " ".join(HOT_WORD if rng.random() < hot_word_share else rng.choice(WORDS) for _ in range(n))


def read_source_state(state_dir: Path | str) -> dict | None:
    """The source's last written state, or None before its first write."""
    try:
        return json.loads((Path(state_dir) / STATE_FILE).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


class ReplayableSource:
    def __init__(self, profile, state_dir: Path | str, now: float):
        """profile: spark_apps.profile.RateProfile (offered_count(t), total()); now: wall-clock seconds."""
        self.profile, self.state_dir = profile, Path(state_dir)
        saved = read_source_state(self.state_dir) or {}
        self.t0 = saved.get("t0", now)
        self.next_seq = saved.get("next_seq", 0)
        self.committed = saved.get("committed", 0)
        self.acked_above = set(saved.get("acked_above", []))
        self.replayed = saved.get("replayed", 0)
        self.restarts = saved.get("restarts", -1) + 1
        # everything emitted and not acked before a restart: its tuples died with the old worker
        self.replay = deque(s for s in range(self.committed, self.next_seq) if s not in self.acked_above)
        self.replayed += len(self.replay)
        self.in_flight: set[int] = set()

    def offered(self, now: float) -> int:
        return self.profile.offered_count(now - self.t0)

    def next_batch(self, now: float, limit: int) -> list[int]:
        """Up to `limit` records to emit now: replays first, then new records that are due."""
        batch = []
        while self.replay and len(batch) < limit:
            batch.append(self.replay.popleft())
        due = self.offered(now)
        while self.next_seq < due and len(batch) < limit:
            batch.append(self.next_seq)
            self.next_seq += 1
        self.in_flight.update(batch)
        return batch

    def ack(self, seq: int) -> None:
        self.in_flight.discard(seq)
        if seq < self.committed:
            return
        self.acked_above.add(seq)
        while self.committed in self.acked_above:
            self.acked_above.remove(self.committed)
            self.committed += 1

    def fail(self, seq: int) -> None:
        """A tuple timed out or a bolt failed it: emit it again."""
        if seq in self.in_flight:
            self.in_flight.discard(seq)
            self.replay.append(seq)
            self.replayed += 1

    def acked(self) -> int:
        return self.committed + len(self.acked_above)

    def snapshot(self, now: float) -> dict:
        offered = self.offered(now)
        return {"t0": self.t0, "next_seq": self.next_seq, "committed": self.committed,
                "acked_above": sorted(self.acked_above), "replayed": self.replayed, "restarts": self.restarts,
                "offered": offered, "total": self.profile.total(), "acked": self.acked(),
                "pending": len(self.in_flight), "backlog": offered - self.next_seq + len(self.replay),
                "written_at": now}

    def save(self, now: float) -> None:
        """Write the state atomically (a reader never sees half a file)."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.state_dir / f".{STATE_FILE}.{os.getpid()}"
        tmp.write_text(json.dumps(self.snapshot(now)))
        os.replace(tmp, self.state_dir / STATE_FILE)
