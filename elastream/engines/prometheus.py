"""A small Prometheus HTTP API client: instant queries (one number, or one per label value) and range queries.

Engines turn the answers into the core's JobObservation; this module knows nothing of any engine.
"""
from __future__ import annotations

import requests

from elastream.engines.base import MetricsUnavailable


class PrometheusClient:
    def __init__(self, url: str, timeout_s: float | tuple[float, float] = (3.0, 10.0),
                 session: requests.Session | None = None):
        """timeout_s: requests' (connect, read) seconds: a hanging Prometheus holds the caller that long at most."""
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self.http = session or requests.Session()

    def scalar(self, promql: str) -> float | None:
        """The first sample of an instant query, or None when the result is empty."""
        data = self._query(promql)
        result = data.get("result") or []
        if data.get("resultType") == "scalar":
            return float(result[1])
        return float(result[0]["value"][1]) if result else None

    def vector(self, promql: str, label: str) -> dict[str, float]:
        """label value -> sample value, for every series of an instant query (series without the label skipped)."""
        data = self._query(promql)
        out: dict[str, float] = {}
        for series in data.get("result") or []:
            key = (series.get("metric") or {}).get(label)
            if key is not None:
                out[key] = float(series["value"][1])
        return out

    def series(self, promql: str) -> list[dict[str, str]]:
        """The label sets of an instant query's series (for info metrics)."""
        return [dict(s.get("metric") or {}) for s in self._query(promql).get("result") or []]

    def range(self, promql: str, start: float, end: float, step_s: float) -> list[tuple[dict[str, str], list[float], list[float]]]:
        """(labels, times, values) of every series of a range query."""
        data = self._query(promql, {"start": start, "end": end, "step": step_s}, "query_range")
        return [(dict(s.get("metric") or {}), [float(t) for t, _ in s.get("values") or []],
                 [float(v) for _, v in s.get("values") or []]) for s in data.get("result") or []]

    def _query(self, promql: str, extra: dict | None = None, api: str = "query") -> dict:
        try:
            resp = self.http.get(f"{self.url}/api/v1/{api}", params={"query": promql, **(extra or {})},
                                 timeout=self.timeout_s)
        except requests.RequestException as err:
            raise MetricsUnavailable(f"Prometheus at {self.url} is unreachable: {type(err).__name__}") from err
        if resp.status_code != 200:
            raise MetricsUnavailable(f"Prometheus at {self.url} answered {resp.status_code} to {promql!r}: {resp.text[:200]}")
        return resp.json().get("data", {})
