"""Running the real operator (kopf run operator/main.py) against the test cluster."""
from __future__ import annotations

import contextlib
import os
import time
from typing import Callable

from kopf.testing import KopfRunner

from tests.conftest import ROOT

OPERATOR = str(ROOT / "operator" / "main.py")


@contextlib.contextmanager
def operator_in_process(cluster, namespace: str, *extra: str, metrics_port: int = 0):
    """kopf's KopfRunner: the operator in a thread of the test process, watching one namespace.
    Its /metrics is served on metrics_port (once per process; 0 = not at all)."""
    old = {k: os.environ.get(k) for k in ("KUBECONFIG", "ELASTREAM_METRICS_PORT")}
    os.environ["KUBECONFIG"] = cluster.kubeconfig
    os.environ["ELASTREAM_METRICS_PORT"] = str(metrics_port)
    try:
        with KopfRunner(["run", "--standalone", "--namespace", namespace, OPERATOR, *extra],
                        timeout=120) as runner:
            yield runner
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def wait_for(what: str, check: Callable[[], object], timeout: float = 60.0, every: float = 0.5):
    """Poll check() until it returns something truthy; fail with `what` after timeout seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except Exception as err:  # the object may not exist yet
            last = err
        else:
            if last:
                return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last: {last!r}")
