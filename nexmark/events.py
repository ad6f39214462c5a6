"""The Nexmark event stream as a pure function of (seed, event number): any slice of it can be made again, in any
order, by the producer that writes it to Kafka and by the verifiers that recompute a query's answer in batch.

The semantics follow the standard generator (Apache Beam's Nexmark, which the Flink and the papers' versions follow):
of every 50 events 1 is a new person, 3 are new auctions and 46 are bids; ids count up from 1000 in event order;
half of the bids go to the latest "hot" auction and the rest to one of the auctions still in flight; 3 in 4 bidders
and sellers are hot people, the others are among the recently active; prices are log-uniform between $1 and $1M.
Randomness is a counter-based hash (splitmix64) of the seed, the event number and the field, not a stream of draws,
so event n never depends on the events before it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

PERSON, AUCTION, BID = 0, 1, 2
PERSONS_PER_EPOCH, AUCTIONS_PER_EPOCH, EVENTS_PER_EPOCH = 1, 3, 50
FIRST_PERSON_ID = FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID, CATEGORIES = 10, 5
HOT_AUCTION_RATIO, HOT_BIDDER_RATIO, HOT_SELLER_RATIO = 2, 4, 4
AUCTIONS_IN_FLIGHT, ACTIVE_PEOPLE = 100, 1000
AUCTION_LENGTH_MS = 10_000  # an auction stays open ~10 s of event time on average (Beam: in-flight auctions / rate)
US_STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")
US_CITIES = ("Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent",
             "Cheyenne")
FIRST_NAMES = ("Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter")
LAST_NAMES = ("Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris")
CHANNELS = ("Google", "Facebook", "Baidu", "Apple")

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: a bijection of uint64 that scatters neighbouring inputs."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _draw(seed: int, n: np.ndarray, field: int) -> np.ndarray:
    """A uint64 per event, independent across (seed, event, field)."""
    with np.errstate(over="ignore"):
        base = _mix(np.uint64(seed & 0xFFFFFFFFFFFFFFFF) * _GOLDEN + np.uint64(field))
        return _mix(np.asarray(n, dtype=np.uint64) * _GOLDEN + base)


def _below(seed: int, n: np.ndarray, field: int, bound: int | np.ndarray) -> np.ndarray:
    return (_draw(seed, n, field) % np.asarray(bound, dtype=np.uint64)).astype(np.int64)


def _unit(seed: int, n: np.ndarray, field: int) -> np.ndarray:
    return (_draw(seed, n, field) >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def kind(n: np.ndarray) -> np.ndarray:
    """PERSON, AUCTION or BID of each event number."""
    offset = np.asarray(n, dtype=np.int64) % EVENTS_PER_EPOCH
    return np.where(offset < PERSONS_PER_EPOCH, PERSON,
                    np.where(offset < PERSONS_PER_EPOCH + AUCTIONS_PER_EPOCH, AUCTION, BID))


def last_person(n: np.ndarray) -> np.ndarray:
    """Id of the newest person at event n (event 0 is a person, so there always is one)."""
    n = np.asarray(n, dtype=np.int64)
    epoch, offset = n // EVENTS_PER_EPOCH, n % EVENTS_PER_EPOCH
    return FIRST_PERSON_ID + epoch * PERSONS_PER_EPOCH + np.minimum(offset, PERSONS_PER_EPOCH - 1)


def last_auction(n: np.ndarray) -> np.ndarray:
    """Id of the newest auction at event n (the first auction's id before there is any)."""
    n = np.asarray(n, dtype=np.int64)
    epoch, offset = n // EVENTS_PER_EPOCH, n % EVENTS_PER_EPOCH
    made = epoch * AUCTIONS_PER_EPOCH + np.clip(offset - PERSONS_PER_EPOCH + 1, 0, AUCTIONS_PER_EPOCH)
    return FIRST_AUCTION_ID + np.maximum(made - 1, 0)


def _price(seed: int, n: np.ndarray, field: int) -> np.ndarray:
    """Cents, log-uniform over [$1, $1M]."""
    return np.round(np.power(10.0, _unit(seed, n, field) * 6.0) * 100.0).astype(np.int64)


def _recent(seed: int, n: np.ndarray, field: int, newest: np.ndarray, first: int, window: int) -> np.ndarray:
    """One of the `window` ids up to `newest` (not below `first`)."""
    span = np.minimum(newest - first + 1, window)
    return newest - _below(seed, n, field, span)


def _hot_or_recent(seed: int, n: np.ndarray, field: int, ratio: int, newest: np.ndarray, first: int,
                   window: int) -> np.ndarray:
    """(ratio-1) in ratio: the hot id (newest rounded down to a multiple of ratio, kept >= first); else a recent id."""
    hot = np.maximum((newest // ratio) * ratio, first)
    return np.where(_below(seed, n, field, ratio) > 0, hot, _recent(seed, n, field + 1, newest, first, window))


@dataclass(frozen=True)
class Events:
    """A slice of the stream, column by column (fields of other kinds hold -1 or "")."""

    n: np.ndarray
    kind: np.ndarray
    time_ms: np.ndarray
    id: np.ndarray  # person id, auction id, or (bids) the auction bid on
    person: np.ndarray  # auction: seller; bid: bidder
    price: np.ndarray  # auction: initial bid; bid: the bid (cents)
    reserve: np.ndarray
    category: np.ndarray
    expires_ms: np.ndarray
    name: list[str]
    city: list[str]
    state: list[str]
    channel: list[str]


def generate(seed: int, n: np.ndarray, time_ms: np.ndarray) -> Events:
    """Events number `n` (any order) with their event times in epoch milliseconds."""
    n = np.asarray(n, dtype=np.int64)
    time_ms = np.asarray(time_ms, dtype=np.int64)
    k = kind(n)
    epoch, offset = n // EVENTS_PER_EPOCH, n % EVENTS_PER_EPOCH
    persons, auctions = last_person(n), last_auction(n)
    auction_id = FIRST_AUCTION_ID + epoch * AUCTIONS_PER_EPOCH + (offset - PERSONS_PER_EPOCH)
    bid_on = _hot_or_recent(seed, n, 1, HOT_AUCTION_RATIO, auctions, FIRST_AUCTION_ID, AUCTIONS_IN_FLIGHT)
    ids = np.where(k == PERSON, persons, np.where(k == AUCTION, auction_id, bid_on))
    who = np.where(k == AUCTION,
                   _hot_or_recent(seed, n, 3, HOT_SELLER_RATIO, persons, FIRST_PERSON_ID, ACTIVE_PEOPLE),
                   _hot_or_recent(seed, n, 3, HOT_BIDDER_RATIO, persons, FIRST_PERSON_ID, ACTIVE_PEOPLE))
    price = _price(seed, n, 5)
    reserve = price + _price(seed, n, 6)
    category = FIRST_CATEGORY_ID + _below(seed, n, 7, CATEGORIES)
    expires = time_ms + 1 + _below(seed, n, 8, 2 * AUCTION_LENGTH_MS)
    first, last = _below(seed, n, 9, len(FIRST_NAMES)), _below(seed, n, 10, len(LAST_NAMES))
    city, state, channel = _below(seed, n, 11, len(US_CITIES)), _below(seed, n, 12, len(US_STATES)), \
        _below(seed, n, 13, len(CHANNELS))
    is_person, is_auction, is_bid = k == PERSON, k == AUCTION, k == BID
    return Events(
        n=n, kind=k, time_ms=time_ms, id=ids,
        person=np.where(is_person, -1, who),
        price=np.where(is_person, -1, price),
        reserve=np.where(is_auction, reserve, -1),
        category=np.where(is_auction, category, -1),
        expires_ms=np.where(is_auction, expires, -1),
        name=[f"{FIRST_NAMES[a]} {LAST_NAMES[b]}" if p else "" for a, b, p in zip(first, last, is_person)],
        city=[US_CITIES[c] if p else "" for c, p in zip(city, is_person)],
        state=[US_STATES[s] if p else "" for s, p in zip(state, is_person)],
        channel=[CHANNELS[c] if b else "" for c, b in zip(channel, is_bid)],
    )


def to_json(e: Events) -> list[bytes]:
    """Each event as Nexmark's JSON record: event_type (0 person, 1 auction, 2 bid) and that kind's object, times in
    epoch milliseconds; `n` (the event number) lets a checker count every event exactly once."""
    out = []
    for i in range(len(e.n)):
        n, k, t, ident = int(e.n[i]), int(e.kind[i]), int(e.time_ms[i]), int(e.id[i])
        if k == PERSON:
            first = e.name[i].split(" ")[0].lower()
            obj = {"id": ident, "name": e.name[i], "emailAddress": f"{first}{ident}@example.com",
                   "creditCard": f"{ident % 10000:04d} {n % 10000:04d} 0000 0000", "city": e.city[i],
                   "state": e.state[i], "dateTime": t}
        elif k == AUCTION:
            obj = {"id": ident, "itemName": f"item-{ident}", "description": f"auction {ident}",
                   "initialBid": int(e.price[i]), "reserve": int(e.reserve[i]), "dateTime": t,
                   "expires": int(e.expires_ms[i]), "seller": int(e.person[i]), "category": int(e.category[i])}
        else:
            obj = {"auction": ident, "bidder": int(e.person[i]), "price": int(e.price[i]), "channel": e.channel[i],
                   "url": f"https://www.nexmark.com/{e.channel[i].lower()}/item.htm?query=1", "dateTime": t}
        key = ("person", "auction", "bid")[k]
        out.append(json.dumps({"n": n, "event_type": k, key: obj}, separators=(",", ":")).encode())
    return out
