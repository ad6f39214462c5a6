"""The Nexmark paths benchmark's arithmetic: the rate from the query's progress, the table and its reading."""
from __future__ import annotations

from elastream.bench_nexmark_paths import Run, _rate, reading, table


def progress(start: str, rows: int, ms: int) -> dict:
    return {"timestamp": start, "numInputRows": rows, "durationMs": {"triggerExecution": ms}}


def test_the_rate_leaves_the_first_batch_out_and_spans_the_rest_start_to_end():
    batches = [progress("2026-12-08T01:00:00.000Z", 50_000, 9_000),  # the JVM warming up: left out
               progress("2026-12-08T01:00:09.000Z", 50_000, 2_000),
               progress("2026-12-08T01:00:11.000Z", 50_000, 3_000)]
    assert _rate(batches) == 100_000 / 5.0


def runs(connector: list[float], python: list[float]) -> list[Run]:
    return [Run(q, p, v, 8) for q in ("q1", "q5") for p, values in (("connector", connector),
                                                                    ("python-source", python)) for v in values]


def test_the_table_shows_medians_spreads_and_the_ratio():
    text = table(runs([10_000, 20_000, 30_000], [10_000, 10_000, 10_000]))
    assert "| q1 | connector | 20,000 | 10,000–30,000 | 3 | 2.00 |" in text
    assert "| q5 | python-source | 10,000 | 10,000–10,000 | 3 |  |" in text


def test_the_reading_says_whether_the_paths_runs_overlap():
    assert "overlap for both queries" in reading(runs([10_000, 12_000], [11_000, 13_000]))
    assert "do not overlap" in reading(runs([30_000, 31_000], [10_000, 11_000]))
    assert "0.25 of Flink's 155,000" in reading(runs([38_750], [30_000]))
