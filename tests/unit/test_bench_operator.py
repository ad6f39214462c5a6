"""The pure side of `elastream bench operator`: Prometheus text in, figures and a table out."""
import pytest

from elastream.bench_operator import measure as m
from elastream.bench_operator.fleet import stream_app, policy
from elastream.api.manifests import parse_manifest

TEXT = """# TYPE elastream_operator_decision_cpu_seconds histogram
elastream_operator_decision_cpu_seconds_bucket{le="0.005"} 50.0
elastream_operator_decision_cpu_seconds_bucket{le="0.01"} 90.0
elastream_operator_decision_cpu_seconds_bucket{le="0.05"} 100.0
elastream_operator_decision_cpu_seconds_bucket{le="+Inf"} 100.0
elastream_operator_decision_cpu_seconds_count 100.0
elastream_operator_decision_cpu_seconds_sum 0.7
# TYPE apiserver_request_total counter
apiserver_request_total{verb="GET",resource="pods"} 3
apiserver_request_total{verb="PUT",resource="streamapps"} 4
"""


def test_quantiles_interpolate_within_buckets_as_promql_does():
    b = m.buckets(TEXT, "elastream_operator_decision_cpu_seconds")
    assert m.quantile(0.5, b) == pytest.approx(0.005)
    assert m.quantile(0.7, b) == pytest.approx(0.0075)  # halfway through the (5 ms, 10 ms] bucket
    assert m.quantile(0.99, b) == pytest.approx(0.01 + 0.04 * 0.9)
    assert m.quantile(0.5, {}) is None


def test_deltas_and_totals():
    before = {0.005: 10.0, 0.01: 10.0, float("inf"): 10.0}
    assert m.delta(m.buckets(TEXT, "elastream_operator_decision_cpu_seconds"), before)[0.005] == 40.0
    assert m.total(TEXT, "apiserver_request_total") == 7


def test_the_table_has_a_column_per_run():
    runs = [m.RunResult(apps=10, slow_apps=0, interval_s=30, first_round_s=12.0, evaluated=10),
            m.RunResult(apps=10, slow_apps=1, interval_s=30, first_round_s=None, evaluated=9)]
    table = m.table(runs)
    assert "| all evaluated once after | 12 s | not all |" in table
    assert "| evaluated at least once | 10/10 | 9/10 |" in table


def test_the_bench_objects_are_valid_manifests():
    for doc in (stream_app("app-0001", "bench", "http://127.0.0.1:1"), policy("bench", "http://127.0.0.1:1", 30.0)):
        parse_manifest(doc)


@pytest.mark.parametrize("option, value, says", [
    ("apps", 0, "--apps must be at least 1"),
    ("interval", 1.0, "--interval must be between 5 seconds and 8760 hours"),
    ("window", 0.0, "--window must be above 0"),
    ("first_round_limit", -5.0, "--first-round-limit must be above 0"),
])
def test_bad_bench_arguments_are_refused_naming_the_option(option, value, says):
    import argparse

    from elastream.bench_operator.run import check_arguments
    from elastream.errors import UserError

    args = argparse.Namespace(apps=10, interval=30.0, window=None, first_round_limit=600.0)
    check_arguments(args)
    setattr(args, option, value)
    with pytest.raises(UserError, match=says):
        check_arguments(args)


@pytest.mark.parametrize("text", ["", "x", "0,1.5", "-0.1", "0;0.1"])
def test_bad_slow_fractions_are_refused(text):
    from elastream.bench_operator.run import slow_fractions
    from elastream.errors import UserError

    with pytest.raises(UserError, match="--slow-fractions"):
        slow_fractions(text)
    assert slow_fractions("0,0.1") == [0.0, 0.1]
