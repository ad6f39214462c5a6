"""Small helpers over the official kubernetes client (loaded once, in-cluster or from KUBECONFIG)."""
from __future__ import annotations

import base64
import copy
import functools
import json
import os
from typing import Any, Callable

import kubernetes
from kubernetes.client.rest import ApiException

from controllers.lanes import LaneSizes
from elastream.api import GROUP, VERSION


@functools.cache
def api_client() -> kubernetes.client.ApiClient:
    try:
        kubernetes.config.load_incluster_config()
    except kubernetes.config.ConfigException:
        kubernetes.config.load_kube_config(config_file=os.environ.get("KUBECONFIG"))
    config = kubernetes.client.Configuration.get_default_copy()
    # a kept-alive connection per step slot (the default, 5 per CPU, would make the other steps connect anew)
    sizes = LaneSizes.from_environment()
    config.connection_pool_maxsize = sizes.fast + sizes.slow
    return kubernetes.client.ApiClient(config)


def core() -> kubernetes.client.CoreV1Api:
    return kubernetes.client.CoreV1Api(api_client())


def custom() -> kubernetes.client.CustomObjectsApi:
    return kubernetes.client.CustomObjectsApi(api_client())


def get_custom(namespace: str, plural: str, name: str) -> dict[str, Any] | None:
    try:
        return custom().get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
    except ApiException as err:
        if err.status == 404:
            return None
        raise


def update_status(namespace: str, name: str, change: Callable[[dict[str, Any]], dict[str, Any]],
                  plural: str = "streamapps", attempts: int = 8,
                  body: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Write status as `change(latest status)`, with optimistic concurrency.

    Two writers share a StreamApp's status (the reconcile handlers and the autoscaling loop), each setting its
    own conditions in one list. A merge patch of the list would drop what the other wrote since we read it, so we
    read, change the freshest status, and PUT it with its resourceVersion; a 409 means someone wrote in between:
    read again and redo the change. (Server-side apply with a field manager per writer would work too, but a
    manager's conditions it leaves out of an apply are deleted, so every writer would have to re-assert all of
    its conditions every time.) Nothing is written when the change changes nothing. None if the object is gone.
    `body`, just read by the caller, saves the first read.
    """
    for _ in range(attempts):
        body = copy.deepcopy(body) if body is not None else get_custom(namespace, plural, name)
        if body is None:
            return None
        old = body.get("status") or {}
        new = change(copy.deepcopy(old))
        if new == old:
            return body
        body["status"] = new
        try:
            return custom().replace_namespaced_custom_object_status(GROUP, VERSION, namespace, plural, name, body)
        except ApiException as err:
            if err.status == 404:
                return None
            if err.status != 409:
                raise
        body = None  # conflict: read the latest and redo the change
    raise RuntimeError(f"status of {plural}/{name} in {namespace}: still conflicting after {attempts} attempts")


def patch_replicas(namespace: str, name: str, replicas: int) -> None:
    """Write the desired executor count through the scale subresource, as an autoscaler does."""
    custom().patch_namespaced_custom_object_scale(GROUP, VERSION, namespace, "streamapps", name,
                                                  {"spec": {"replicas": int(replicas)}})


class SecretProblem(Exception):
    """A Secret or one of its keys is missing; `reason` is the condition reason (SecretNotFound, SecretKeyNotFound)."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def read_secret_key(namespace: str, name: str, key: str) -> str:
    try:
        secret = core().read_namespaced_secret(name, namespace)
    except ApiException as err:
        if err.status == 404:
            raise SecretProblem("SecretNotFound", f"Secret {namespace}/{name} not found") from None
        raise
    if key not in (secret.data or {}):
        raise SecretProblem("SecretKeyNotFound", f"Secret {namespace}/{name} has no key {key!r}")
    return base64.b64decode(secret.data[key]).decode().strip()


def get_pod(namespace: str, name: str) -> dict[str, Any] | None:
    """The pod as plain JSON (camelCase, as in a manifest), or None."""
    try:
        resp = core().read_namespaced_pod(name, namespace, _preload_content=False)
    except ApiException as err:
        if err.status == 404:
            return None
        raise
    return json.loads(resp.data)


def delete_pod(namespace: str, name: str, grace_period_s: int | None = None) -> None:
    """Delete a pod (gracefully unless grace_period_s says otherwise); gone already is fine."""
    try:
        core().delete_namespaced_pod(name, namespace, grace_period_seconds=grace_period_s)
    except ApiException as err:
        if err.status != 404:
            raise


def sync_config_map(manifest: dict[str, Any], namespace: str) -> bool:
    """Make an existing ConfigMap's data the manifest's; True when it had to change."""
    name = manifest["metadata"]["name"]
    current = core().read_namespaced_config_map(name, namespace)
    if (current.data or {}) == manifest["data"]:
        return False
    core().replace_namespaced_config_map(name, namespace, {**manifest, "metadata": {
        **manifest["metadata"], "resourceVersion": current.metadata.resource_version}})
    return True


def create_if_absent(manifest: dict[str, Any], namespace: str) -> str | None:
    """Create the object unless it exists (idempotent reconciles); its creationTimestamp when created, else None."""
    try:
        (created,) = kubernetes.utils.create_from_dict(api_client(), manifest, namespace=namespace)
    except kubernetes.utils.FailToCreateError as err:
        if all(getattr(e, "status", None) == 409 for e in err.api_exceptions):
            return None
        raise
    return created.metadata.creation_timestamp.strftime("%Y-%m-%dT%H:%M:%SZ")


def api_error_message(err: Exception) -> str:
    """The API server's own words for a failed call (e.g. an RBAC refusal), for a condition message."""
    errors = getattr(err, "api_exceptions", None) or [err]  # create_from_dict wraps them in FailToCreateError
    messages = []
    for e in errors:
        try:
            messages.append(json.loads(e.body)["message"])
        except (AttributeError, TypeError, ValueError, KeyError):
            messages.append(f"{getattr(e, 'status', '')} {getattr(e, 'reason', '') or e}".strip())
    return "; ".join(messages)
