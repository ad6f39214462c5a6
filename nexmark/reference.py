"""What each Nexmark query (spark_apps.nexmark) must output for a slice of the stream, computed in batch with numpy
from the generator alone, and the check of a sink's rows against it: every expected row exactly once, nothing else.

q5's windows are emitted when the watermark passes them, so only the windows closed by the final watermark must be
there; every window that is there must hold exactly the right rows.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from nexmark import events as ev
from spark_apps.nexmark_params import (EURO_PER_MILLE_DOLLAR, Q2_MODULUS, Q3_CATEGORY, Q3_STATES, Q5_SIZE_MS,
                                       Q5_SLIDE_MS, Q8_WINDOW_MS, WATERMARK_MS)

QUERIES = ("q1", "q2", "q3", "q5", "q8")
COLUMNS = {
    "q1": ("n", "auction", "bidder", "price", "dateTime"),
    "q2": ("n", "auction", "price"),
    "q3": ("n", "auction", "name", "city", "state"),
    "q5": ("window_start_ms", "auction", "count"),
    "q8": ("n", "person", "name", "window_start_ms", "auction"),
}


@dataclass
class Check:
    query: str
    expected: int  # rows the query must output
    received: int  # rows in the sink
    missing: int
    duplicates: int
    unexpected: int  # rows that should not be there at all

    @property
    def ok(self) -> bool:
        return self.missing == self.duplicates == self.unexpected == 0


def expected_rows(query: str, e: ev.Events) -> Counter:
    """The rows `query` outputs over events e (all events 0..N-1, in order), as a multiset of tuples."""
    if query not in QUERIES:
        raise ValueError(f"unknown Nexmark query {query!r} (one of {', '.join(QUERIES)})")
    bid = np.flatnonzero(e.kind == ev.BID)
    if query == "q1":
        price = e.price[bid] * EURO_PER_MILLE_DOLLAR // 1000
        return Counter(zip(e.n[bid].tolist(), e.id[bid].tolist(), e.person[bid].tolist(), price.tolist(),
                           e.time_ms[bid].tolist()))
    if query == "q2":
        hit = bid[e.id[bid] % Q2_MODULUS == 0]
        return Counter(zip(e.n[hit].tolist(), e.id[hit].tolist(), e.price[hit].tolist()))
    if query == "q3":
        return _q3(e)
    if query == "q5":
        return _q5(e)
    return _q8(e)


def _person_event(e: ev.Events, person_id: np.ndarray) -> np.ndarray:
    """Index in e of each person's own event (person ids count people in event order)."""
    return (person_id - ev.FIRST_PERSON_ID) * ev.EVENTS_PER_EPOCH


def _q3(e: ev.Events) -> Counter:
    auc = np.flatnonzero((e.kind == ev.AUCTION) & (e.category == Q3_CATEGORY))
    seller = _person_event(e, e.person[auc])
    rows = Counter()
    for a, p in zip(auc.tolist(), seller.tolist()):
        if e.state[p] in Q3_STATES:
            rows[(int(e.n[a]), int(e.id[a]), e.name[p], e.city[p], e.state[p])] += 1
    return rows


def _q5(e: ev.Events) -> Counter:
    bid = np.flatnonzero(e.kind == ev.BID)
    t, auction = e.time_ms[bid], e.id[bid]
    per = Q5_SIZE_MS // Q5_SLIDE_MS
    first = t // Q5_SLIDE_MS - per + 1  # the earliest sliding window holding t, in slides
    starts = ((first[:, None] + np.arange(per)[None, :]) * Q5_SLIDE_MS).ravel()
    counts = Counter(zip(starts.tolist(), np.repeat(auction, per).tolist()))
    best: dict[int, int] = {}
    for (start, _), c in counts.items():
        best[start] = max(best.get(start, 0), c)
    return Counter({(s, a, c): 1 for (s, a), c in counts.items() if c == best[s]})


def _q8(e: ev.Events) -> Counter:
    auc = np.flatnonzero(e.kind == ev.AUCTION)
    seller = _person_event(e, e.person[auc])
    window = e.time_ms[auc] // Q8_WINDOW_MS * Q8_WINDOW_MS
    same = e.time_ms[seller] // Q8_WINDOW_MS * Q8_WINDOW_MS == window
    rows = Counter()
    for a, p, w in zip(auc[same].tolist(), seller[same].tolist(), window[same].tolist()):
        rows[(int(e.n[a]), int(e.id[p]), e.name[p], w, int(e.id[a]))] += 1
    return rows


def check(query: str, e: ev.Events, rows: list[dict]) -> Check:
    """Compare the sink's rows of `query` with what events e must give."""
    want = expected_rows(query, e)
    got = Counter(tuple(r[c] for c in COLUMNS[query]) for r in rows)
    if query == "q5":  # only the windows the final watermark closed must be there; those there must be whole
        watermark = int(e.time_ms.max()) - WATERMARK_MS
        present = {k[0] for k in got}
        want = Counter({k: n for k, n in want.items() if k[0] + Q5_SIZE_MS <= watermark or k[0] in present})
    missing = sum((want - got).values())
    extra = got - want
    duplicates = sum(n - want[k] for k, n in got.items() if k in want and n > want[k])
    return Check(query, sum(want.values()), sum(got.values()), missing, duplicates,
                 sum(extra.values()) - duplicates)
