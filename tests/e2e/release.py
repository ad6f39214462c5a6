"""The operator's Helm release for the walk-throughs that follow the Spark one (Storm, Kafka): installed once per
module, as a pod on a real node under the chart's own ServiceAccount, and uninstalled after it."""
from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Callable, Iterator

from tests.e2e.test_kubernetes import CHART, helm

RELEASE_NS, WATCHED = "elastream-system", "default"


def not_terminating(k, namespace: str) -> bool:
    found = k.kubectl("get", "namespace", namespace, "-o", "json", check=False)
    return found.returncode != 0 or json.loads(found.stdout)["status"]["phase"] == "Active"


@contextmanager
def operator_release(k, wait: Callable[..., object]) -> Iterator[str]:
    """`wait(what, check, timeout=...)` is the module's own wait (its diagnosis on failure)."""
    # the Spark walk-through (tests/e2e/test_kubernetes.py) deletes its release's and Prometheus' namespaces
    # without waiting: nothing can be created in a namespace while it terminates
    for namespace in (RELEASE_NS, "monitoring"):
        wait(f"namespace {namespace} gone or active", lambda ns=namespace: not_terminating(k, ns), timeout=300)
    helm(k, "upgrade", "--install", "elastream", str(CHART), "-n", RELEASE_NS, "--create-namespace", "--wait",
         "--timeout", "5m", "--set", f"watchNamespaces={{{WATCHED}}}")
    try:
        yield RELEASE_NS
    finally:
        helm(k, "uninstall", "elastream", "-n", RELEASE_NS, "--wait", "--timeout", "2m", check=False)
        k.kubectl("delete", "namespace", RELEASE_NS, "--wait=false", check=False)
