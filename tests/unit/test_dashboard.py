"""The chart's Grafana dashboard: valid JSON, a query in every panel, and only metrics the code exports.
Whether each query returns data from a real Prometheus is checked end to end (tests/e2e/test_dashboard.py)."""
from __future__ import annotations

import json
import re

import pytest

from tests.dashboard import DASHBOARD, EXPORTERS, exported_metric_names, expand, load, metric_names, panel_queries, panels


def exprs() -> list[str]:
    return [t["expr"] for p in panels(load()) for t in p.get("targets", [])]


def test_the_dashboard_is_valid_json_with_its_variables():
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["title"]
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert variables["app"]["type"] == "query" and not variables["app"]["includeAll"]
    assert variables["namespace"]["includeAll"] and variables["namespace"]["allValue"] == ".*"
    ids = [p["id"] for p in panels(dashboard)]
    assert len(ids) == len(set(ids)), "panel ids must be unique"


def test_every_panel_is_a_timeseries_with_a_query_on_the_datasource_variable():
    found = panels(load())
    assert len(found) >= 6
    for panel in found:
        assert panel["type"] == "timeseries", panel["title"]
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"], f"panel {panel['title']!r} has no query"
        for target in panel["targets"]:
            assert target["expr"].strip(), f"panel {panel['title']!r} has an empty query"
            assert target["datasource"]["uid"] == "${datasource}", panel["title"]


def test_the_panels_cover_load_backlog_latency_executors_and_decisions():
    used = set().union(*(metric_names(e) for e in exprs()))
    for name in ("elastream_input_rate", "elastream_processing_rate", "elastream_backlog_records",
                 "elastream_latency_p99_seconds", "elastream_executors", "elastream_desired_executors",
                 "elastream_operator_decisions_total"):
        assert name in used, f"no panel reads {name}"


def test_storm_topologies_have_their_own_row_and_the_app_list_holds_them():
    storm = [e for _, e in panel_queries(DASHBOARD, engine="storm")]
    spark = [e for _, e in panel_queries(DASHBOARD)]
    assert len(storm) + len(spark) == len(exprs())
    used = set().union(*(metric_names(e) for e in storm))
    assert {"elastream_storm_input_rate", "elastream_storm_processing_rate", "elastream_storm_executors",
            "elastream_storm_busy_fraction_max", "elastream_storm_complete_latency_seconds",
            "elastream_storm_backlog_records"} <= used
    assert all(n.startswith("elastream_storm_") for n in used)
    assert not any("elastream_storm_" in e for e in spark)
    (app,) = [v for v in load()["templating"]["list"] if v["name"] == "app"]
    assert "elastream_storm_workers" in app["definition"] and "elastream_input_rate" in app["definition"]


def test_every_metric_the_dashboard_reads_is_exported_by_the_code():
    exported = exported_metric_names()
    assert {"elastream_input_rate", "elastream_records_processed_total", "elastream_operator_decisions_total",
            "elastream_operator_realize_seconds_bucket", "elastream_desired_executors"} <= exported
    # the query variables' label_values(<selector>, <label>): their selector is PromQL
    selectors = [re.fullmatch(r"label_values\((.+),\s*\w+\)", v["definition"]).group(1)
                 for v in load()["templating"]["list"] if v["type"] == "query"]
    assert len(selectors) == 2
    for expr in exprs() + selectors:
        names = metric_names(expr)
        assert names, f"no metric in {expr!r}"
        missing = names - exported
        assert not missing, f"{expr!r} reads {sorted(missing)}, which none of {[p.name for p in EXPORTERS]} exports"


def test_the_job_panels_select_one_app_and_the_operator_gauge_its_streamapp():
    for expr in exprs():
        for selector in re.findall(r"(elastream_\w+)\{([^}]*)\}", expr):
            name, matchers = selector
            if name == "elastream_desired_executors":
                assert 'streamapp="$app"' in matchers, expr
            elif not name.startswith("elastream_operator_"):
                assert 'app="$app"' in matchers, expr


def test_panel_queries_fill_in_every_variable():
    queries = panel_queries(DASHBOARD, app="wc", namespace="team-a", rate_interval="30s", engine=None)
    assert len(queries) == len(exprs())
    for title, expr in queries:
        assert "$" not in expr and "[[" not in expr, (title, expr)
    joined = "\n".join(e for _, e in queries)
    assert 'app="wc"' in joined and 'namespace=~"team-a"' in joined and "[30s]" in joined
    assert 'streamapp="wc"' in joined
    titles = [t for t, _ in queries]
    assert "Backlog" in titles and "End-to-end latency [p99]" in titles


def test_expand_knows_grafanas_variable_syntaxes_and_names_a_missing_one():
    assert expand('x{a="$app",b="${app}",c="${app:regex}",d="[[app]]"}[$__rate_interval]',
                  {"app": "wc", "__rate_interval": "1m"}) == 'x{a="wc",b="wc",c="wc",d="wc"}[1m]'
    with pytest.raises(KeyError, match=r"\$job"):
        expand('up{job="$job"}', {})


def test_metric_names_leaves_out_labels_functions_and_keywords():
    assert metric_names('sum by (action, guard) (increase(a_total{x="b_c"}[1m])) / on (k) group_left(v) b '
                        'offset 5m > bool 0.5') == {"a_total", "b"}
    assert metric_names("histogram_quantile(0.9, sum by (le) (rate(h_bucket[5m])))") == {"h_bucket"}
