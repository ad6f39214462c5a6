"""Pure parts of spark_apps (no JVM): profile arithmetic, record contents, the control body parser, the checker."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from spark_apps import records, verify
from spark_apps.control import BadRequest, parse_replace, parse_target
from spark_apps.profile import make_profile, parse_duration


@pytest.mark.parametrize("kind", ["constant", "step", "sinusoid"])
def test_offer_time_inverts_offered(kind):
    p = make_profile(kind, rate=100, peak_rate=300, period="10s")
    seq = np.arange(20_000)
    t = p.offer_time(seq)
    assert np.all(np.diff(t) > 0)
    assert np.array_equal(np.floor(p.offered(t) + 1e-9), seq + 1)


def test_step_and_duration_totals():
    p = make_profile("step", rate=100, peak_rate=300, period="10s", duration="25s")
    assert p.total() == 100 * 10 + 300 * 10 + 100 * 5
    assert p.offered_count(1e9) == p.total()
    assert p.rate_at(5) == 100 and p.rate_at(15) == 300 and p.rate_at(26) == 0


def test_trace_profile(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("time,rate\n0,10\n5,50\n8,0\n")
    p = make_profile("trace", rate=1, trace=str(trace))
    assert p.total() == 10 * 5 + 50 * 3  # ends at the final rate 0
    assert p.offer_time(np.array([49, 50]))[1] == pytest.approx(5.02)


def test_bad_profiles():
    with pytest.raises(ValueError, match="unknown profile"):
        make_profile("square")
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration("5 parsecs")
    assert parse_duration("1h30m") == 5400 and parse_duration("500ms") == 0.5


def test_records_are_deterministic():
    seq = np.arange(1000)
    assert records.lines(seq) == records.lines(seq.copy())
    ids = records.word_ids(seq)
    assert ids.shape == (1000, records.WORDS_PER_LINE)
    assert len(np.unique(ids)) == records.VOCABULARY  # the hash reaches every word


@pytest.mark.parametrize("body,error", [
    (b'{"target": 7}', "target 7 is outside 1..4"),
    (b'{"target": "3"}', 'target must be an integer, got "3"'),
    (b"[]", 'body must be JSON like {"target": 2}'),
    (b"", 'body must be JSON like {"target": 2}'),
])
def test_parse_target_rejects(body, error):
    with pytest.raises(BadRequest, match=re.escape(error)):
        parse_target(body, 1, 4)


def test_parse_target_accepts():
    assert parse_target(b'{"target": 4}', 1, 4) == 4


@pytest.mark.parametrize("body", [b"", b"[]", b'{"executors": []}', b'{"executors": [3]}', b'{"executors": "3"}'])
def test_parse_replace_rejects(body):
    with pytest.raises(BadRequest, match=re.escape('body must be JSON like {"executors": ["1", "2"]}')):
        parse_replace(body)


def test_parse_replace_accepts():
    assert parse_replace(b'{"executors": ["3", "4"]}') == ["3", "4"]


def _write_run(tmp_path, app: str, total_s: int = 10, rate: int = 50):
    ck, sink = tmp_path / "ck", tmp_path / "sink"
    ck.mkdir()
    run = {"app": app, "start_us": 1_700_000_000_000_000, "window": 2.0,
           "source": {"type": "generator", "generator": {"profile": "constant", "rate": rate, "peak_rate": None,
                      "period": None, "trace": None, "duration": f"{total_s}s"},
                      "kafka": None, "partitions": 2, "max_records_per_batch": None}}
    (ck / "elastream-run.json").write_text(json.dumps(run))
    return str(ck), sink, rate * total_s


def _batch(sink, batch_id, rows, complete=True):
    d = sink / f"batch-{batch_id:09d}"
    d.mkdir(parents=True)
    (d / "part-00000.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if complete:
        (d / "_SUCCESS").write_text("")


def test_verify_records_finds_missing_and_duplicates(tmp_path):
    ck, sink, n = _write_run(tmp_path, "identity")
    _batch(sink, 0, [{"seq": s} for s in range(0, 300)])
    _batch(sink, 1, [{"seq": s} for s in range(290, n - 5)])  # 10 duplicates, 5 missing
    _batch(sink, 2, [{"seq": s} for s in range(n - 5, n)], complete=False)  # incomplete: ignored
    r = verify.check(ck, str(sink))
    assert (r.produced, r.processed, r.missing, r.duplicates, r.batches) == (n, n - 5, 5, 10, 2)
    assert not r.exactly_once


def _word_rows(seqs):
    ids = records.word_ids(np.array(seqs))
    out = {}
    for s, row in zip(seqs, ids):
        for i in row:
            w = records.word(int(i))
            c, t = out.get(w, (0, 0))
            out[w] = (c + 1, t + s)
    return [{"word": w, "count": c, "seq_sum": t} for w, (c, t) in out.items()]


def test_verify_wordcount(tmp_path):
    ck, sink, n = _write_run(tmp_path, "wordcount")
    _batch(sink, 0, _word_rows(list(range(100))))
    _batch(sink, 1, _word_rows(list(range(n))))  # update mode: later rows supersede
    assert verify.check(ck, str(sink)).exactly_once
    _batch(sink, 2, _word_rows(list(range(n)) + [7]))  # record 7 counted twice
    r = verify.check(ck, str(sink))
    assert r.duplicates == 1 and not r.exactly_once


def test_verify_wordcount_same_count_wrong_records(tmp_path):
    ck, sink, n = _write_run(tmp_path, "wordcount")
    seqs = list(range(n))
    rows = _word_rows(seqs)
    rows[0] = {**rows[0], "seq_sum": rows[0]["seq_sum"] + 1}
    _batch(sink, 0, rows)
    assert verify.check(ck, str(sink)).unexpected == 1
