"""Nexmark's queries as streaming apps over a Kafka topic of Nexmark events (nexmark.producer writes it).

The input is the normalised (seq, event_time, value) of spark_apps.source; `value` is one event's JSON. Every query
keeps each event's number `n` (or the auction's) in its output, so nexmark.reference can check exactly-once:

- q1 (currency map): every bid with its price in euro cents (price · 0.908, rounded down); append.
- q2 (filter): the bids on auctions whose id is a multiple of 123; append.
- q3 (local item suggestion): auctions of category 10 joined with their sellers living in OR, ID or CA
  (stream-stream inner join, unbounded state as in Nexmark); append.
- q5 (hot items): per sliding window (10 s, every 2 s) of event time, the auction(s) with the most bids; the counts
  are a watermarked window aggregation (append: each window once, when the watermark passes it), the max is taken
  per micro-batch, which holds every count of the windows it closes.
- q8 (monitor new users): people who created an auction in the same 10 s tumbling window in which they joined;
  one row per (person, auction) pair, an event-time window join; append.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from spark_apps.nexmark_params import (EURO_PER_MILLE_DOLLAR, Q2_MODULUS, Q3_CATEGORY, Q3_STATES, Q5_SIZE_MS,
                                       Q5_SLIDE_MS, Q8_WINDOW_MS, WATERMARK_MS)


def _interval(ms: int) -> str:
    """A Spark interval string for a duration in milliseconds ("5 seconds")."""
    return f"{ms // 1000} seconds" if ms % 1000 == 0 else f"{ms} milliseconds"


WATERMARK = _interval(WATERMARK_MS)
Q5_SIZE, Q5_SLIDE = _interval(Q5_SIZE_MS), _interval(Q5_SLIDE_MS)
Q8_WINDOW = _interval(Q8_WINDOW_MS)


def _struct(fields: str) -> StructType:
    types = {"long": LongType(), "string": StringType(), "int": IntegerType()}
    return StructType([StructField(name, types[kind]) for name, kind in (f.split(":") for f in fields.split())])


PERSON = _struct("id:long name:string emailAddress:string creditCard:string city:string state:string dateTime:long")
AUCTION = _struct("id:long itemName:string description:string initialBid:long reserve:long dateTime:long "
                  "expires:long seller:long category:long")
BID = _struct("auction:long bidder:long price:long channel:string url:string dateTime:long")
EVENT = StructType([StructField("n", LongType()), StructField("event_type", IntegerType()),
                    StructField("person", PERSON), StructField("auction", AUCTION), StructField("bid", BID)])


def events(df: DataFrame) -> DataFrame:
    """(n, event_type, person, auction, bid) of each record."""
    return df.select(F.from_json("value", EVENT).alias("e")).select("e.*")


def _of(df: DataFrame, event_type: int, kind: str) -> DataFrame:
    """One kind's fields, with `n` and its event time as `ts`."""
    return (events(df).where(F.col("event_type") == event_type)
            .select("n", f"{kind}.*").withColumn("ts", F.timestamp_millis("dateTime")))


def persons(df: DataFrame) -> DataFrame:
    return _of(df, 0, "person")


def auctions(df: DataFrame) -> DataFrame:
    return _of(df, 1, "auction")


def bids(df: DataFrame) -> DataFrame:
    return _of(df, 2, "bid")


def q1(df: DataFrame, _=None) -> DataFrame:
    price = (F.col("price") * EURO_PER_MILLE_DOLLAR / 1000).cast("long")
    return bids(df).select("n", "auction", "bidder", price.alias("price"), "dateTime")


def q2(df: DataFrame, _=None) -> DataFrame:
    return bids(df).where(F.col("auction") % Q2_MODULUS == 0).select("n", "auction", "price")


def q3(df: DataFrame, _=None) -> DataFrame:
    sellers = persons(df).where(F.col("state").isin(*Q3_STATES)).select(
        F.col("id").alias("person"), "name", "city", "state")
    sold = auctions(df).where(F.col("category") == Q3_CATEGORY).select(
        F.col("n"), F.col("id").alias("auction"), "seller")
    return sold.join(sellers, sold.seller == sellers.person).select("n", "auction", "name", "city", "state")


def q5_counts(df: DataFrame, _=None) -> DataFrame:
    """The streaming half of q5: bids per auction per sliding window, each window once."""
    windowed = bids(df).withWatermark("ts", WATERMARK).groupBy(F.window("ts", Q5_SIZE, Q5_SLIDE), "auction")
    return windowed.agg(F.count(F.lit(1)).alias("count")).select(
        F.unix_millis("window.start").alias("window_start_ms"), "auction", "count")


def q5_hottest(batch: DataFrame) -> DataFrame:
    """The per-batch half: in each window, the auctions with the most bids (ties all kept)."""
    top = F.max("count").over(Window.partitionBy("window_start_ms"))
    return batch.withColumn("top", top).where(F.col("count") == F.col("top")).drop("top")


def q8(df: DataFrame, _=None) -> DataFrame:
    joined = persons(df).withWatermark("ts", WATERMARK).select(
        F.col("id").alias("person"), "name", F.window("ts", Q8_WINDOW).alias("joined_in"))
    created = auctions(df).withWatermark("ts", WATERMARK).select(
        F.col("n"), F.col("id").alias("auction"), "seller", F.window("ts", Q8_WINDOW).alias("created_in"))
    pairs = joined.join(created, (joined.person == created.seller) & (joined.joined_in == created.created_in))
    return pairs.select("n", "person", "name", F.unix_millis("joined_in.start").alias("window_start_ms"),
                        "auction")
