"""kopf settings of the operator process: login, persistence, events, timeouts, peering, worker lanes, its /metrics.

A regular module (imported once per process), so its handlers register once even when `kopf run` loads
operator/main.py again — as kopf's KopfRunner does for every in-process run in the tests.
"""
from __future__ import annotations

import logging
import os
import zlib

import kopf
from prometheus_client import start_http_server

from controllers.lanes import LaneSizes, install
from controllers.webhook import WEBHOOK_PORT, webhook_server


def peering_priority() -> int:
    """Replicas need distinct priorities (equal ones all freeze): explicit, else derived from the pod's name."""
    if os.environ.get("ELASTREAM_PEERING_PRIORITY"):
        return int(os.environ["ELASTREAM_PEERING_PRIORITY"])
    pod = os.environ.get("POD_NAME", "")
    return zlib.crc32(pod.encode()) % 10_000 if pod else 0


@kopf.on.login()
def login(**kwargs):
    """In a pod: its service account; elsewhere: $KUBECONFIG (read now, not when a library was imported)."""
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, logger, **_) -> None:
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="elastream.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix="elastream.io")
    settings.posting.enabled = os.environ.get("ELASTREAM_POST_EVENTS", "true").lower() == "true"
    # our own events (Reconciled, Rescaled, ...) are posted with kopf.event(), which this level does not filter;
    # kopf's per-handler chatter ("Handler ... succeeded") would be more API writes per StreamApp: only its
    # warnings and errors (kopf.info() and kopf.warn() obey this level: we do not use them)
    settings.posting.level = logging.WARNING
    settings.watching.server_timeout = 60
    settings.watching.client_timeout = 70
    settings.networking.request_timeout = 30
    settings.peering.priority = peering_priority()
    # StreamApp loops are coroutines; their blocking steps run in the lanes' bounded pools (controllers.lanes);
    # kopf's own pool serves the few sync handlers left (ElasticityPolicy validation)
    sizes = LaneSizes.from_environment()
    install(sizes)
    settings.execution.max_workers = sizes.fast
    server = webhook_server()
    if server is not None:  # the chart mounts the certificate and registers the webhook (not kopf: managed stays off)
        settings.admission.server = server
        logger.info("placement webhook on :%d", WEBHOOK_PORT)
    port = int(os.environ.get("ELASTREAM_METRICS_PORT", "8080"))
    if port and not _metrics_started:
        start_http_server(port)
        _metrics_started.append(port)  # once per process: kopf may be restarted in-process (tests)
        logger.info("operator metrics on :%d/metrics", port)


_metrics_started: list[int] = []
