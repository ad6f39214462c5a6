"""The Nexmark generator and reference answers (pure numpy), and the Kafka source's sharing of an admission limit."""
from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from nexmark import events as ev
from nexmark import reference
from spark_apps.kafka_source import share_out

N = np.arange(50_000, dtype=np.int64)
E = ev.generate(3, N, 1_000_000 + N * 20)  # 50 events/s of event time


def test_the_standard_proportions_and_ids_in_event_order():
    assert np.bincount(E.kind).tolist() == [1_000, 3_000, 46_000]
    persons, auctions = E.id[E.kind == ev.PERSON], E.id[E.kind == ev.AUCTION]
    assert persons.tolist() == list(range(1000, 2000)) and auctions.tolist() == list(range(1000, 4000))


def test_bids_and_sellers_refer_to_what_exists_already():
    bid, auc = E.kind == ev.BID, E.kind == ev.AUCTION
    assert np.all(E.id[bid] <= ev.last_auction(N[bid])) and np.all(E.id[bid] >= 1000)
    assert np.all(E.person[bid | auc] <= ev.last_person(N[bid | auc])) and np.all(E.person[bid | auc] >= 1000)
    hot = E.id[bid] == np.maximum(ev.last_auction(N[bid]) // 2 * 2, 1000)
    assert 0.45 < hot.mean() < 0.6  # half of the bids go to the hot auction (plus the recent ones that are it)
    assert 100 <= E.price[bid].min() and E.price[bid].max() <= 100_000_000


def test_any_slice_in_any_order_is_the_same_stream():
    pick = np.array([49_999, 7, 12_345, 0])
    again = ev.generate(3, pick, 1_000_000 + pick * 20)
    for field in ("kind", "id", "person", "price", "category", "expires_ms"):
        assert getattr(again, field).tolist() == getattr(E, field)[pick].tolist()
    assert again.name == [E.name[i] for i in pick]
    assert ev.generate(4, pick, pick).price.tolist() != again.price.tolist()  # another seed, another stream


def test_reference_rows_follow_the_query_definitions():
    q2 = reference.expected_rows("q2", E)
    assert q2 and all(auction % 123 == 0 for _, auction, _ in q2)
    q3 = reference.expected_rows("q3", E)
    assert q3 and all(state in ("OR", "ID", "CA") for *_, state in q3)
    q5 = reference.expected_rows("q5", E)
    starts = Counter(start for start, _, _ in q5)
    assert set(s % 2000 for s in starts) == {0} and len(starts) > 400  # one row (or a tie) per sliding window


def test_a_check_counts_what_is_lost_doubled_or_foreign():
    rows = [dict(zip(reference.COLUMNS["q2"], r)) for r in reference.expected_rows("q2", E).elements()]
    assert reference.check("q2", E, rows).ok
    bad = rows[1:] + [rows[2], {"n": -1, "auction": 0, "price": 0}]
    check = reference.check("q2", E, bad)
    assert (check.missing, check.duplicates, check.unexpected) == (1, 1, 1)


@given(st.dictionaries(st.sampled_from("0123456789"), st.integers(0, 10_000), min_size=1), st.integers(0, 20_000))
def test_an_admission_limit_is_shared_in_proportion_and_never_over(waiting, limit):
    take = share_out(waiting, limit)
    assert sum(take.values()) == min(limit, sum(waiting.values()))
    assert all(0 <= take[p] <= waiting[p] for p in waiting)
    total = sum(waiting.values())
    if total > limit:
        assert all(abs(take[p] - waiting[p] * limit / total) < 1 for p in waiting)
