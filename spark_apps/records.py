"""What a generated record contains: a deterministic function of its sequence number and the run's start.

A record is (seq, event_time, value): `value` is a short line of words chosen by hashing `seq`, so the word counts a
correct job must produce can be recomputed from the sequence numbers alone (spark_apps.verify does).
"""
from __future__ import annotations

import numpy as np

from spark_apps.profile import RateProfile

VOCABULARY = 100  # distinct words: w00 .. w99
WORDS_PER_LINE = 4
_MULT = np.uint64(2654435761)  # Knuth's multiplicative hash spreads consecutive seqs over the vocabulary


def word_ids(seq: np.ndarray) -> np.ndarray:
    """(len(seq), WORDS_PER_LINE) word numbers of each record."""
    s = np.asarray(seq, dtype=np.uint64)[:, None]
    j = np.arange(WORDS_PER_LINE, dtype=np.uint64)[None, :]
    return (((s * _MULT + j * np.uint64(40503)) >> np.uint64(7)) % np.uint64(VOCABULARY)).astype(np.int64)


def word(i: int) -> str:
    return f"w{i:02d}"


def lines(seq: np.ndarray) -> list[str]:
    """The value (a line of words) of each record."""
    return [" ".join(word(int(i)) for i in row) for row in word_ids(seq)]


def event_time_us(profile: RateProfile, start_us: int, seq: np.ndarray) -> np.ndarray:
    """Event time of each record, microseconds since the Unix epoch (Spark timestamps are microseconds)."""
    return start_us + np.floor(profile.offer_time(seq) * 1e6).astype(np.int64)
