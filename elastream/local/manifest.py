"""Read a StreamApp (and its policy) from the YAML users apply to a cluster, with the API server's checks."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from elastream.api.manifests import ManifestError, parse_manifest
from elastream.api.safe_yaml import read_documents
from elastream.api.policy import ElasticityPolicySpec
from elastream.api.streamapp import StreamAppSpec
from elastream.errors import UserError


@dataclass
class LocalApp:
    name: str
    spec: StreamAppSpec
    policy: ElasticityPolicySpec
    policy_name: str  # "inline", "default" or the ElasticityPolicy's name


def load(path: Path) -> LocalApp:
    docs = read_documents(path)
    apps, policies = [], {}
    for doc in docs:
        kind, name, spec = parse_manifest(doc)
        if kind == "StreamApp":
            apps.append((name, spec))
        else:
            policies[name] = spec
    if len(apps) != 1:
        raise UserError(f"{path}: expected exactly one StreamApp, found {len(apps)}")
    name, spec = apps[0]
    if spec.policy is not None:
        return LocalApp(name, spec, spec.policy, "inline")
    if spec.policy_ref is None:
        return LocalApp(name, spec, ElasticityPolicySpec(), "default")
    if spec.policy_ref.name not in policies:
        raise ManifestError(name, [f"spec.policyRef.name: ElasticityPolicy {spec.policy_ref.name!r} is not in {path}"])
    return LocalApp(name, spec, policies[spec.policy_ref.name], spec.policy_ref.name)
