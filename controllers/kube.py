"""Small helpers over the official kubernetes client (loaded once, in-cluster or from KUBECONFIG)."""
from __future__ import annotations

import base64
import functools
import os
from typing import Any

import kubernetes
from kubernetes.client.rest import ApiException

from elastream.api import GROUP, VERSION


@functools.cache
def api_client() -> kubernetes.client.ApiClient:
    try:
        kubernetes.config.load_incluster_config()
    except kubernetes.config.ConfigException:
        kubernetes.config.load_kube_config(config_file=os.environ.get("KUBECONFIG"))
    return kubernetes.client.ApiClient()


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


def patch_status(namespace: str, plural: str, name: str, status: dict[str, Any]) -> None:
    custom().patch_namespaced_custom_object_status(GROUP, VERSION, namespace, plural, name, {"status": status})


def patch_replicas(namespace: str, name: str, replicas: int) -> None:
    """Write the desired executor count through the scale subresource, as an autoscaler does."""
    custom().patch_namespaced_custom_object_scale(GROUP, VERSION, namespace, "streamapps", name,
                                                  {"spec": {"replicas": int(replicas)}})


def read_secret_key(namespace: str, name: str, key: str) -> str:
    secret = core().read_namespaced_secret(name, namespace)
    if key not in (secret.data or {}):
        raise KeyError(f"Secret {namespace}/{name} has no key {key!r}")
    return base64.b64decode(secret.data[key]).decode().strip()


def create_if_absent(manifest: dict[str, Any], namespace: str) -> bool:
    """Create the object unless it exists (idempotent reconciles); True when created."""
    try:
        kubernetes.utils.create_from_dict(api_client(), manifest, namespace=namespace)
        return True
    except kubernetes.utils.FailToCreateError as err:
        if all(getattr(e, "status", None) == 409 for e in err.api_exceptions):
            return False
        raise
