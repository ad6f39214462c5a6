"""Direct scrape of the runner's exposition text gives the same quantities as the default PromQL."""
import pytest

from elastream.engines.base import MetricsUnavailable
from elastream.engines.spark.observation import spark_observation
from elastream.engines.spark.scrape import job_values, parse_samples

TEXT = """# TYPE elastream_input_rate gauge
elastream_input_rate{app="wc",query="a"} 600.0
elastream_input_rate{app="wc",query="b"} 400.0
elastream_input_rate{app="other",query="a"} 9999.0
elastream_processing_rate{app="wc",query="a"} 500.0
elastream_processing_rate{app="wc",query="b"} 400.0
elastream_batch_duration_seconds{app="wc",query="a"} 0.9
elastream_batch_duration_seconds{app="wc",query="b"} 0.3
elastream_trigger_interval_seconds{app="wc",query="a"} 1.0
elastream_trigger_interval_seconds{app="wc",query="b"} 1.0
elastream_latency_p99_seconds{app="wc",query="a"} 2.5
elastream_latency_p99_seconds{app="wc",query="b"} 4.0
elastream_backlog_records{app="wc",query="a"} 120.0
elastream_executors{app="wc"} 2.0
"""


def test_values_aggregate_like_the_default_queries():
    v = job_values(parse_samples(TEXT, "wc"))
    assert v["inputRate"] == 1000.0 and v["processingRate"] == 900.0
    assert v["busyFraction"] == pytest.approx(0.9) and v["latencyP99"] == 4.0
    assert v["backlog"] == 120.0 and v["executors"] == 2.0 and v["latencyP50"] is None


def test_observation_needs_the_required_metrics():
    obs = spark_observation("wc", job_values(parse_samples(TEXT, "wc")), 10.0, max_parallelism=6)
    assert obs.parallelism == {"executors": 2} and obs.stages[0].max_parallelism == 6
    # Spark's processedRowsPerSecond is per busy second: 900/s while 90 % busy = 810/s of wall-clock time,
    # so the core's true processing rate (rate / busy) comes back to 900/s and is not counted twice
    assert obs.stages[0].processing_rate == pytest.approx(810.0)
    assert obs.stages[0].true_processing_rate() == pytest.approx(900.0)
    with pytest.raises(MetricsUnavailable, match="executors"):
        spark_observation("wc", job_values(parse_samples(TEXT.replace('elastream_executors{app="wc"} 2.0', ""), "wc")),
                          10.0, None)


def test_a_kafka_sources_partitions_bound_the_useful_executors():
    """A batch reads one task per Kafka partition: more executors than ceil(partitions / cores) would idle."""
    from elastream.engines.spark.observation import partition_bound, spark_observation
    from spark_apps.metrics import source_partitions

    assert source_partitions(['{"orders": {"0": 5, "1": 7, "2": 0}}', None]) == 3
    assert source_partitions(['{"seq": 120}']) is None  # the generator: no partitions, no bound
    assert partition_bound(8, 3.0, 1) == 3 and partition_bound(8, 6.0, 4) == 2 and partition_bound(2, 12.0, 1) == 2
    assert partition_bound(None, 5.0, 2) == 3 and partition_bound(8, None, 1) == 8
    values = {"inputRate": 10.0, "processingRate": 10.0, "busyFraction": 0.5, "executors": 2.0, "sourcePartitions": 4.0}
    assert spark_observation("a", values, 0.0, max_parallelism=10, executor_cores=2).stages[0].max_parallelism == 2


def test_the_runner_exports_a_kafka_sources_partitions_and_nothing_for_the_generator():
    from prometheus_client import generate_latest

    from spark_apps.metrics import Metrics

    m = Metrics("a", 1.0, backlog=lambda q: 0, executors=lambda: (1, 1))
    m.queries = {"kafka", "gen"}
    m.last = {"kafka": {"latest_offsets": ['{"t": {"0": 4, "1": 9}}']}, "gen": {"latest_offsets": ['{"seq": 5}']}}
    text = generate_latest(m.registry).decode()
    assert 'elastream_source_partitions{app="a",query="kafka"} 2.0' in text
    assert 'query="gen"' not in "".join(line for line in text.splitlines() if "source_partitions{" in line)
