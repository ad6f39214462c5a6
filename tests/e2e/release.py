"""The operator's Helm release for the walk-throughs that follow the Spark one (Storm, Kafka): installed once per
module, as a pod on a real node under the chart's own ServiceAccount, and uninstalled after it."""
from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Callable, Iterator

from tests.e2e.test_kubernetes import CHART, helm
from tests.operator_fixtures import wait_for

RELEASE_NS, WATCHED = "elastream-system", "default"


def diagnosed(diagnosis: Callable[[object], str]) -> Callable[..., object]:
    """A module's wait_for(k, what, check, timeout, every): on a timeout, the failure also shows diagnosis(k)."""

    def wait(k, what, check, timeout=60.0, every=2.0):
        try:
            return wait_for(what, check, timeout=timeout, every=every)
        except AssertionError as err:
            raise AssertionError(f"{err}\n--- cluster state ---\n{diagnosis(k)}") from None

    return wait


def not_terminating(k, namespace: str) -> bool:
    found = k.kubectl("get", "namespace", namespace, "-o", "json", check=False)
    return found.returncode != 0 or json.loads(found.stdout)["status"]["phase"] == "Active"


@contextmanager
def operator_release(k) -> Iterator[str]:
    # the Spark walk-through (tests/e2e/test_kubernetes.py) deletes its release's and Prometheus' namespaces
    # without waiting: nothing can be created in a namespace while it terminates
    for namespace in (RELEASE_NS, "monitoring"):
        wait_for(f"namespace {namespace} gone or active", lambda ns=namespace: not_terminating(k, ns), timeout=300)
    helm(k, "upgrade", "--install", "elastream", str(CHART), "-n", RELEASE_NS, "--create-namespace", "--wait",
         "--timeout", "5m", "--set", f"watchNamespaces={{{WATCHED}}}")
    try:
        yield RELEASE_NS
    finally:
        helm(k, "uninstall", "elastream", "-n", RELEASE_NS, "--wait", "--timeout", "2m", check=False)
        k.kubectl("delete", "namespace", RELEASE_NS, "--wait=false", check=False)
