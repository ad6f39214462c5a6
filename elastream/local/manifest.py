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
    directory: Path = Path(".")  # the manifest's: a relative mainApplicationFile is found from it


def _read(path: Path) -> tuple[list, dict]:
    """([(name, StreamAppSpec)], {name: ElasticityPolicySpec}) of a file, each manifest checked as the API server would."""
    apps, policies = [], {}
    for doc in read_documents(path):
        try:
            kind, name, spec = parse_manifest(doc)
        except ManifestError as err:  # named with its file, as `elastream validate` names it
            raise ManifestError(f"{path}: {err.name}", err.problems) from None
        if kind == "StreamApp":
            apps.append((name, spec))
        else:
            policies[name] = spec
    return apps, policies


def with_policy(path: Path, name: str, spec: StreamAppSpec, policies: dict) -> LocalApp:
    """The app with the policy the operator would give it: inline, referenced (in the same file) or the default."""
    if spec.policy is not None:
        return LocalApp(name, spec, spec.policy, "inline")
    if spec.policy_ref is None:
        return LocalApp(name, spec, ElasticityPolicySpec(), "default")
    if spec.policy_ref.name not in policies:
        raise ManifestError(name, [f"spec.policyRef.name: ElasticityPolicy {spec.policy_ref.name!r} is not in {path}"])
    return LocalApp(name, spec, policies[spec.policy_ref.name], spec.policy_ref.name)


def load(path: Path) -> LocalApp:
    apps, policies = _read(path)
    if len(apps) != 1:
        raise UserError(f"{path}: expected exactly one StreamApp, found {len(apps)}")
    app = with_policy(path, *apps[0], policies)
    app.directory = path.resolve().parent
    return app


def load_policy(path: Path) -> tuple[str, ElasticityPolicySpec, StreamAppSpec | None]:
    """(name, policy, app or None) for `elastream simulate --policy-file`: with one StreamApp in the file, the policy
    the operator would give it (as `load`); with none, the file's one ElasticityPolicy. UserError naming the file
    otherwise; an invalid manifest is refused field by field."""
    apps, policies = _read(path)
    if len(apps) == 1:
        app = with_policy(path, *apps[0], policies)
        return f"{app.policy_name} (StreamApp/{app.name})", app.policy, app.spec
    if apps:
        raise UserError(f"{path}: {len(apps)} StreamApps ({', '.join(n for n, _ in apps)}); give a file with one")
    if len(policies) != 1:
        found = f" ({', '.join(policies)})" if policies else ""
        raise UserError(f"{path}: {len(policies)} ElasticityPolicy manifests{found} and no StreamApp; give a file "
                        "with one of either")
    name, spec = next(iter(policies.items()))
    return name, spec, None
