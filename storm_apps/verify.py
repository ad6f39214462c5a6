"""At-least-once check of a Storm run: every record the source emitted reached the sink whole (all its parts), and
how many tuples arrived more than once (replays after a rebalance restarted a worker).

Reads the source's state (storm_apps.source) and the sink's files (storm_apps/resources/elastream_sink.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from storm_apps.source import read_source_state


@dataclass(frozen=True)
class Check:
    produced: int  # records the source emitted (at least once)
    processed: int  # of them, records whose every part reached the sink
    missing: int
    duplicates: int  # sink lines beyond the first of each (record, part)


def check(state_dir: Path | str, upto: int | None = None) -> Check:
    """`upto`: judge only the records below it (a topology still running: its committed offset, below which every
    record was acked, so must be whole at the sink), else every record the source emitted."""
    state_dir = Path(state_dir)
    produced = (read_source_state(state_dir) or {}).get("next_seq", 0)
    if upto is not None:
        produced = min(produced, upto)
    parts: dict[int, set[int]] = {}
    expected: dict[int, int] = {}
    lines = 0
    for path in sorted(state_dir.glob("sink-*.txt")):
        with open(path) as f:
            for line in f:
                fields = line.split()
                if len(fields) != 3:  # a line cut short by a killed worker: its tuple was not acked
                    continue
                seq, part, total = (int(x) for x in fields)
                lines += 1
                parts.setdefault(seq, set()).add(part)
                expected[seq] = total
    whole = sum(1 for seq in range(produced) if seq in parts and len(parts[seq]) >= expected[seq])
    distinct = sum(len(p) for p in parts.values())
    return Check(produced, whole, produced - whole, lines - distinct)
