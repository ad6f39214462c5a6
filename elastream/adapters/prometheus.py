"""MetricsSource over the Prometheus HTTP API: one instant query per metric, PromQL from the policy."""
from __future__ import annotations

import time

import requests

from elastream.adapters.observation import MetricsUnavailable, spark_observation
from elasticity.model import JobObservation


class PrometheusMetricsSource:
    """Reads a job's metrics from Prometheus. `queries` maps metric name -> PromQL with `{app}` placeholders."""

    def __init__(self, url: str, queries: dict[str, str], app: str, max_parallelism: int | None = None,
                 timeout_s: float = 5.0, session: requests.Session | None = None):
        self.url = url.rstrip("/")
        self.queries = {name: q.replace("{app}", app) for name, q in queries.items()}
        self.max_parallelism = max_parallelism
        self.timeout_s = timeout_s
        self.http = session or requests.Session()

    def observe(self, job: str) -> JobObservation:
        """Raises MetricsUnavailable when Prometheus cannot be reached or required series are missing."""
        values = {name: self.query(q) for name, q in self.queries.items()}
        return spark_observation(job, values, time.time(), self.max_parallelism)

    def query(self, promql: str) -> float | None:
        """The first sample of an instant query, or None when the result is empty."""
        try:
            resp = self.http.get(f"{self.url}/api/v1/query", params={"query": promql}, timeout=self.timeout_s)
        except requests.RequestException as err:
            raise MetricsUnavailable(f"Prometheus at {self.url} is unreachable: {type(err).__name__}") from err
        if resp.status_code != 200:
            raise MetricsUnavailable(f"Prometheus at {self.url} answered {resp.status_code} to {promql!r}: {resp.text[:200]}")
        data = resp.json().get("data", {})
        result = data.get("result") or []
        if data.get("resultType") == "scalar":
            return float(result[1])
        return float(result[0]["value"][1]) if result else None
