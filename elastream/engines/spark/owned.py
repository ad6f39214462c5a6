"""Make a managed app's objects what its spec says: create the missing ones, keep the ConfigMap in sync, and create,
restart, replace or stop the driver pod (elastream.engines.spark.driver decides which). Idempotent; safe to run concurrently."""
from __future__ import annotations

import secrets
from typing import Any

from controllers import kube
from elastream.engines.spark import driver, managed
from elastream.api.streamapp import StreamAppSpec


def ensure_objects(body: dict[str, Any], spec: StreamAppSpec) -> dict[str, str]:
    """Create what is missing, bring the ConfigMap up to date. What was done, by object: {"Secret/x-control":
    "created 2026-11-22T10:00:00Z", "ConfigMap/x-config": "updated"}."""
    namespace = body["metadata"]["namespace"]
    done = {}
    for manifest in managed.owned_objects(body, spec, token=secrets.token_urlsafe(32)):
        what = f"{manifest['kind']}/{manifest['metadata']['name']}"
        created_at = kube.create_if_absent(manifest, namespace)
        if created_at:
            done[what] = f"created {created_at}"
        elif manifest["kind"] == "ConfigMap" and kube.sync_config_map(manifest, namespace):
            done[what] = "updated"
    return done


def credentials_renewed(done: dict[str, str]) -> dict[str, str]:
    """Of what ensure_objects did, the objects a running driver holds credentials from (its control token, its
    ServiceAccount's token) that were created again, with their creation times."""
    return {what: how.removeprefix("created ") for what, how in done.items()
            if what.startswith(("Secret/", "ServiceAccount/")) and how.startswith("created ")}


def ensure_driver(body: dict[str, Any], spec: StreamAppSpec,
                  renewed: dict[str, str] | None = None) -> tuple[driver.DriverAction, dict[str, Any] | None]:
    """One step towards the wanted driver pod; the action taken and the pod as it was found."""
    namespace = body["metadata"]["namespace"]
    wanted = managed.driver_pod(body, spec)
    name = wanted["metadata"]["name"]
    current = kube.get_pod(namespace, name)
    action = driver.plan(current, wanted, spec.suspend, renewed)
    if action.kind == "create":
        kube.create_if_absent(wanted, namespace)
    elif action.kind == "replace":
        kube.delete_pod(namespace, name, grace_period_s=0)  # its containers have exited already
    elif action.deletes:  # restart, stop: SIGTERM, the runner stops its query, Spark removes the executors
        kube.delete_pod(namespace, name)
    return action, current

