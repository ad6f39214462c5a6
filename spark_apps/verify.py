"""Exactly-once check: compare what the sink holds with what the generator offered.

The generator is deterministic, so the expected sink contents follow from (profile, start time, records offered):
- identity / repartition: every seq 0..produced-1 exactly once;
- wordcount: the final count of each word equals the occurrences of that word in those records, and the sum of the
  seqs behind each word matches too (a lost record and a duplicated one cannot cancel out);
- fixwindow: the same per event-time window.
Pure Python + numpy, no Spark: it reads the JSON lines of complete batch directories (those with _SUCCESS).

    python -m spark_apps.verify --checkpoint DIR --sink DIR [--produced N]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from spark_apps import records
from spark_apps.apps import APPS
from spark_apps.runner import RUN_FILE
from spark_apps.sink import BATCH_PREFIX
from spark_apps.profile import RateProfile
from spark_apps.source import GeneratorConfig


@dataclass
class Report:
    produced: int  # records the generator offered
    processed: int  # distinct records the sink accounts for
    missing: int  # offered but absent from the sink
    duplicates: int  # counted more than once
    unexpected: int = 0  # in the sink but never offered (or mismatched sums)
    batches: int = 0

    @property
    def exactly_once(self) -> bool:
        return self.processed == self.produced and self.missing == self.duplicates == self.unexpected == 0


def whole_batches(sink: str) -> list[tuple[int, Path]]:
    """(batch id, directory) of every complete batch (its `_SUCCESS` written), in batch order."""
    root = Path(sink)
    if not root.exists():
        return []
    return [(int(d.name[len(BATCH_PREFIX):]), d) for d in sorted(root.iterdir())
            if d.name.startswith(BATCH_PREFIX) and d.name[len(BATCH_PREFIX):].isdigit() and (d / "_SUCCESS").exists()]


def sink_batches(sink: str) -> list[tuple[int, list[dict]]]:
    """(batch id, rows) of every complete batch, in batch order."""
    out = []
    for batch, d in whole_batches(sink):
        rows = []
        for part in sorted(d.glob("part-*")):
            with open(part) as f:
                rows.extend(json.loads(line) for line in f if line.strip())
        out.append((batch, rows))
    return out


def latest_rows(batches, key: str) -> dict:
    """Update-mode sinks: the last row emitted for each key is its final value."""
    final = {}
    for _, rows in batches:
        for row in rows:
            final[row[key]] = row
    return final


def _compare(expected_count: dict, expected_sum: dict, final: dict, produced: int, per_record: int,
             batches: int) -> Report:
    """Aggregated sinks cannot name the record that went missing, so missing and duplicated occurrences are
    converted to records (rounded up): any nonzero difference is reported as at least one record."""
    missing = dup = unexpected = 0
    for k, row in final.items():
        if k not in expected_count:
            unexpected += int(row["count"])
    for k, exp in expected_count.items():
        got = int(final[k]["count"]) if k in final else 0
        missing += max(0, exp - got)
        dup += max(0, got - exp)
        if got == exp and int(final.get(k, {}).get("seq_sum", -1)) != expected_sum[k]:
            unexpected += 1  # right count, wrong records
    lost = _ceil(missing, per_record)
    return Report(produced, produced - lost, lost, _ceil(dup, per_record), unexpected, batches)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def committed_offsets(checkpoint: str) -> dict | None:
    """The source's end offset (as its JSON) of the last batch the checkpoint marks committed, or None before any."""
    commits = [int(p.name) for p in (Path(checkpoint) / "commits").glob("[0-9]*")]
    return batch_offsets(checkpoint, max(commits)) if commits else None


def batch_offsets(checkpoint: str, batch: int) -> dict:
    """The source's end offset (as its JSON) that batch `batch` planned to read, from the checkpoint's offsets log."""
    lines = (Path(checkpoint) / "offsets" / str(batch)).read_text().splitlines()
    # line 0 is the log version, line 1 the batch metadata, then one offset per source
    return json.loads(lines[2])


def committed_offset(checkpoint: str) -> int:
    """Records read by the batches the checkpoint marks committed: the generator offset ({"seq": n}) in the offsets
    log of the last batch with a commit file. For checking a job that runs on (or was stopped mid-run)."""
    offsets = committed_offsets(checkpoint)
    return int(offsets["seq"]) if offsets else 0


def accounted_offset(checkpoint: str, sink: str) -> int:
    """The generator offset below which the sink must hold every record: the end offset of the last committed batch,
    or of the last batch the sink holds whole if that is later (written, its commit cut short by a stop). Records
    past it were queued or in a batch still running when the job stopped: unfinished, not lost."""
    whole = whole_batches(sink)
    ends = [_or_zero(lambda: committed_offset(checkpoint))]
    if whole:
        ends.append(_or_zero(lambda: int(batch_offsets(checkpoint, whole[-1][0])["seq"])))
    return max(ends)


def _or_zero(read) -> int:
    """An offset read from the checkpoint, or 0 for a file absent, cut short or malformed (the report must still be
    made)."""
    try:
        return read()
    except (OSError, IndexError, KeyError, TypeError, ValueError):
        return 0


def generator_load(checkpoint) -> tuple[RateProfile, float]:
    """(the load profile, when it started in epoch seconds) of the generator run recorded in `checkpoint`
    (FileNotFoundError without the run file; ValueError for a run of another source)."""
    run = json.loads((Path(checkpoint) / RUN_FILE).read_text())
    if run["source"]["type"] != "generator":
        raise ValueError("not a generator run: a Kafka topic's load is not known here")
    return GeneratorConfig(**run["source"]["generator"]).build(), run["start_us"] / 1e6


def check(checkpoint: str, sink: str, produced: int | None = None) -> Report:
    """Compare sink and generator. `produced` defaults to everything offered: the whole run if it had a
    --duration, else what has been offered until now."""
    run = json.loads((Path(checkpoint) / RUN_FILE).read_text())
    src = run["source"]
    if src["type"] != "generator":
        raise ValueError("only generator runs can be checked: a Kafka topic's contents are not known here")
    profile = GeneratorConfig(**src["generator"]).build()
    if produced is None:
        produced = profile.total()
        if produced is None:
            produced = profile.offered_count(time.time() - run["start_us"] / 1e6)
    batches = sink_batches(sink)
    kind = APPS[run["app"]].kind
    seq = np.arange(produced, dtype=np.int64)
    if kind == "records":
        seen = np.array([r["seq"] for _, rows in batches for r in rows], dtype=np.int64)
        distinct, counts = np.unique(seen, return_counts=True)
        valid = distinct[(distinct >= 0) & (distinct < produced)]
        return Report(produced, int(valid.size), produced - int(valid.size), int((counts - 1).sum()),
                      int(distinct.size - valid.size), len(batches))
    if kind == "words":
        ids = records.word_ids(seq)
        counts = np.bincount(ids.ravel(), minlength=records.VOCABULARY)
        sums = np.bincount(ids.ravel(), weights=np.repeat(seq, records.WORDS_PER_LINE).astype(float),
                           minlength=records.VOCABULARY)
        exp_c = {records.word(i): int(c) for i, c in enumerate(counts) if c}
        exp_s = {records.word(i): int(round(s)) for i, s in enumerate(sums) if counts[i]}
        return _compare(exp_c, exp_s, latest_rows(batches, "word"), produced, records.WORDS_PER_LINE, len(batches))
    if kind == "windows":
        width = int(round(run["window"] * 1e6))
        start = records.event_time_us(profile, run["start_us"], seq) // width * width
        keys, inverse = np.unique(start, return_inverse=True)
        counts = np.bincount(inverse)
        sums = np.bincount(inverse, weights=seq.astype(float))
        exp_c = {int(k): int(c) for k, c in zip(keys, counts)}
        exp_s = {int(k): int(round(s)) for k, s in zip(keys, sums)}
        return _compare(exp_c, exp_s, latest_rows(batches, "window_start_us"), produced, 1, len(batches))
    raise ValueError(f"unknown sink kind {kind}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m spark_apps.verify", description="exactly-once check of a run")
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--sink", required=True)
    p.add_argument("--produced", type=int, help="records offered (default: from the run's profile)")
    args = p.parse_args(argv)
    report = check(args.checkpoint, args.sink, args.produced)
    print(json.dumps({**asdict(report), "exactly_once": report.exactly_once}))
    return 0 if report.exactly_once else 1


if __name__ == "__main__":
    sys.exit(main())
