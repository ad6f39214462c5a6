"""Realizer that rescales a Spark job through its runner's control endpoint (bearer-token HTTP JSON)."""
from __future__ import annotations

import requests

from elastream.engines.base import JobUnreachable
from elastream.engines.spark.observation import SPARK_STAGE
from elasticity.model import Decision


class ControlError(JobUnreachable):
    """The control endpoint refused or could not be reached; the message says why."""


class ControlEndpointClient:
    def __init__(self, url: str, token: str, timeout_s: float | tuple[float, float] = (3.0, 10.0),
                 session: requests.Session | None = None):
        """timeout_s: requests' (connect, read) seconds; the runner answers at once (a rescale goes on after)."""
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self.http = session or requests.Session()
        self.http.headers["Authorization"] = f"Bearer {token}"

    def executors(self) -> dict:
        """{"current": n, "target": n, "min": .., "max": ..}"""
        return self._call("GET", {})

    def set_executors(self, target: int) -> dict:
        return self._call("PUT", {"target": int(target)})

    def replace_executors(self, ids: list[str]) -> dict:
        """Decommission these executors with replacements: {"replaced": [ids that were live]}."""
        return self._call("POST", {"executors": list(ids)}, "/executors/replace")

    def _call(self, method: str, body: dict, path: str = "/executors") -> dict:
        try:
            resp = self.http.request(method, f"{self.url}{path}", json=body or None, timeout=self.timeout_s)
        except requests.RequestException as err:
            raise ControlError(f"control endpoint {self.url} unreachable: {type(err).__name__}") from err
        if resp.status_code != 200:
            try:
                detail = resp.json().get("error", resp.text)
            except ValueError:
                detail = resp.text
            raise ControlError(f"control endpoint {self.url} answered {resp.status_code}: {detail}")
        return resp.json()


class ControlEndpointRealizer:
    """Applies decision.targets["executors"] to the job."""

    def __init__(self, client: ControlEndpointClient):
        self.client = client

    def realize(self, job: str, decision: Decision) -> None:
        self.client.set_executors(decision.targets[SPARK_STAGE])
