"""The chart's Grafana dashboard as PromQL: its panels' queries with the template variables filled in, and the
metric names they read. Used by the unit test (every name is one the code exports) and by the end-to-end tests
(every query returns data from a real Prometheus)."""
from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DASHBOARD = ROOT / "charts" / "elastream" / "dashboards" / "elastream.json"
# the code that exports the metrics the dashboard reads: the runner's (driver) and the operator's own
EXPORTERS = (ROOT / "spark_apps" / "metrics.py", ROOT / "controllers" / "metrics.py", ROOT / "storm_apps" / "exporter.py")
STORM_ROW = "Storm topologies"  # the row whose panels read a Storm topology's exporter; the others a Spark job's

# $name, ${name}, ${name:format}, [[name]] (Grafana's variable syntaxes)
_VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)")
_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "and", "or", "unless",
             "inf", "nan", "atan2"}


def load(path: str | Path = DASHBOARD) -> dict:
    with open(path) as f:
        return json.load(f)


def panels(dashboard: dict, engine: str | None = None) -> list[dict]:
    """Every panel, those inside (collapsed) rows included; for one engine's apps (spark or storm) when given: the
    Storm row's panels for storm, the others for spark."""
    out = []
    for panel in dashboard.get("panels", []):
        storm = panel.get("title") == STORM_ROW
        if engine is None or (engine == "storm") == storm:
            out.append(panel)
            out.extend(panel.get("panels", []))
    return [p for p in out if p.get("type") != "row"]


def expand(expr: str, variables: dict[str, str]) -> str:
    """expr with every template variable replaced; KeyError names a variable without a value."""
    def value(m: re.Match) -> str:
        name = next(g for g in m.groups() if g)
        if name not in variables:
            raise KeyError(f"template variable ${name} has no value (in {expr!r})")
        return variables[name]
    return _VARIABLE.sub(value, expr)


def panel_queries(path: str | Path = DASHBOARD, app: str = "wordcount", namespace: str = ".*",
                  rate_interval: str = "1m", engine: str | None = "spark", **variables: str) -> list[tuple[str, str]]:
    """(title, PromQL) of every query of every panel, for one StreamApp: `$app` is `app`, `$namespace` is
    `namespace` (a regex, as the dashboard's "All" is: `.*` also matches series without a namespace label, as
    the runner's are when Prometheus adds none), `$__rate_interval` and `$__interval` are `rate_interval`.
    A panel with several queries gives one entry per query, titled "panel title [legend]". engine: the panels
    for a Spark job (default) or a Storm topology; None: all."""
    values = {"app": app, "namespace": namespace, "__rate_interval": rate_interval, "__interval": rate_interval,
              "__range": "1h", **variables}
    out = []
    for panel in panels(load(path), engine):
        targets = [t for t in panel.get("targets", []) if not t.get("hide")]
        for t in targets:
            title = panel["title"] if len(targets) == 1 else f"{panel['title']} [{t.get('legendFormat') or t['refId']}]"
            out.append((title, expand(t.get("expr", ""), values)))
    return out


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (label matchers, strings, ranges, grouping clauses and
    functions left out). A `{__name__=~"a|b"}` selector names a and b."""
    names = {n for alts in re.findall(r'__name__\s*=~?\s*"([\w:|]+)"', expr) for n in alts.split("|")}
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)  # strings
    text = re.sub(r"\{[^}]*\}", " ", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)  # range and subquery selectors
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)  # label lists
    for m in re.finditer(r"(?<![\w:.])([a-zA-Z_:][\w:]*)(\s*\()?", text):
        if not m.group(2) and m.group(1) not in _KEYWORDS:
            names.add(m.group(1))
    return names


def exported_metric_names(files=EXPORTERS) -> set[str]:
    """Grep-level: the series names exported by `Kind("elastream_...", ...)` calls in the exporting modules, as
    prometheus-client names them (a Counter `x` or `x_total` → `x_total`; a Histogram `x` → `x_bucket`, `x_sum`,
    `x_count`); any other call (Gauge, GaugeMetricFamily, a helper that makes a gauge) → the name itself."""
    names = set()
    for path in files:
        for call, name in re.findall(r"(\w+)\(\s*[\"'](elastream_\w+)[\"']", Path(path).read_text()):
            if call == "Counter":
                names.add(name.removesuffix("_total") + "_total")
            elif call in ("Histogram", "Summary"):
                names |= {f"{name}_sum", f"{name}_count"} | ({f"{name}_bucket"} if call == "Histogram" else set())
            else:
                names.add(name)
    from storm_apps.exporter import COMPONENT_SERIES, SERIES_PREFIX  # named in a loop there, not in a call
    return names | {SERIES_PREFIX + series for series in COMPONENT_SERIES}
