"""`elastream validate`: check StreamApp / ElasticityPolicy manifests as the API server would."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from elastream.errors import UserError, shorten


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "validate",
        help="check StreamApp and ElasticityPolicy manifests without a cluster",
        description="Check manifests with the same rules the CRDs give the API server (types, names, limits, "
        "cross-field rules); each problem is printed as field.path: message. A policyRef to an ElasticityPolicy "
        "found in none of the files (or only in another namespace) is a warning, as is an object too large for "
        "client-side kubectl apply (over 256 KiB). Objects of other APIs (a Namespace, a Deployment) are listed as "
        "not checked; a kind: List is checked item by item. Exit status 1 when any manifest is invalid or a file "
        "holds no object, 2 when a file cannot be read as YAML.",
    )
    p.add_argument("files", nargs="+", type=Path, metavar="FILE", help="YAML manifests (several documents allowed)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from elastream.api.manifests import ManifestError, parse_manifest
    from elastream.api.safe_yaml import read_documents

    failures, unreadable, policies, apps, invalid_policies, seen = 0, 0, {}, [], {}, {}
    for path in args.files:
        try:
            docs = read_documents(path)
        except UserError as err:
            unreadable += 1
            print(err, file=sys.stderr)
            continue
        objects = _objects(docs)
        if not objects:
            failures += 1
            print(f"{path}: no objects in the file")
        for doc in objects:
            if _foreign(doc):
                print(f"{path}: {shorten(doc['kind'], 64)}/{_name(doc)} is not an elastream object: not checked")
                continue
            try:
                kind, name, spec = parse_manifest(doc)
            except ManifestError as err:
                failures += 1
                print(f"{path}: {err}")
                metadata = doc.get("metadata") if isinstance(doc, dict) else None
                if isinstance(metadata, dict) and doc.get("kind") == "ElasticityPolicy" and all(
                        isinstance(metadata.get(k), (str, type(None))) for k in ("namespace", "name")):
                    invalid_policies[(metadata.get("namespace"), metadata.get("name"))] = None
                continue
            print(f"{path}: {kind}/{name} is valid")
            size = _size_problem(doc)
            if size:
                print(f"{path}: {kind}/{name}: {size}")
            namespace = doc["metadata"].get("namespace")
            key = (kind, namespace, name)
            if key in seen:
                print(f"{path}: warning: {kind}/{name} is given again (first in {seen[key]}); kubectl apply keeps "
                      "only the last")
            seen.setdefault(key, path)
            if kind == "ElasticityPolicy":
                policies[(namespace, name)] = spec
            else:
                apps.append((path, namespace, name, spec))
    for path, namespace, app, spec in apps:
        near = _in_namespace(policies, namespace)
        if spec.policy_ref is not None and spec.policy_ref.name in _in_namespace(invalid_policies, namespace):
            continue  # its problems are printed above
        if spec.policy_ref is not None and spec.policy_ref.name not in near:
            elsewhere = sorted({ns for ns, n in policies if n == spec.policy_ref.name})
            where = (f"is only in namespace {', '.join(map(str, elsewhere))}, not the app's ({namespace})" if elsewhere
                     else "is in none of the files given")
            print(f"{path}: warning: StreamApp/{app}: spec.policyRef.name: ElasticityPolicy {spec.policy_ref.name!r} "
                  f"{where}; the operator holds the app (Ready=False, reason PolicyNotFound) until it exists")
            continue
        problem = _policy_problem(path, app, spec, near)
        if problem:
            failures += 1
            print(f"{path}: StreamApp/{app} with {problem}; the operator holds the app (Ready=False, reason "
                  "InvalidSpec)")
    return 2 if unreadable else 1 if failures else 0


LAST_APPLIED_KEY = "kubectl.kubernetes.io/last-applied-configuration"


def _size_problem(doc: dict) -> str:
    """A warning for an object too large for client-side `kubectl apply` — its annotations, plus the last-applied one
    holding the whole object as JSON, over the API server's ANNOTATIONS_MAX — else "". (One it could not store, over
    etcd's 1.5 MiB, cannot pass the schema's limits and ANNOTATIONS_MAX.)"""
    from elastream.api.manifests import ANNOTATIONS_MAX, annotation_bytes

    size = len(json.dumps(doc, separators=(",", ":"), ensure_ascii=False, default=str).encode())
    annotations = dict((doc.get("metadata") or {}).get("annotations") or {})
    annotations.pop(LAST_APPLIED_KEY, None)  # kubectl replaces its own
    if annotation_bytes(annotations) + len(LAST_APPLIED_KEY) + size <= ANNOTATIONS_MAX:
        return ""
    return (f"warning: {size // 1024} KiB as JSON: `kubectl apply` copies it into the annotation {LAST_APPLIED_KEY}, "
            f"and annotations hold at most {ANNOTATIONS_MAX // 1024} KiB; use `kubectl apply --server-side` or "
            "`kubectl create`")


def _in_namespace(objects: dict, namespace) -> dict:
    """{name: value} of the {(namespace, name): value} an object in `namespace` sees: its own namespace's; an object
    with none given goes where `kubectl apply -n` puts it, so it sees any, as any sees it."""
    seen = [(ns == namespace, name, value) for (ns, name), value in objects.items()
            if ns == namespace or ns is None or namespace is None]
    return {name: value for _, name, value in sorted(seen, key=lambda x: x[0])}  # its own namespace's last: it wins


def _policy_problem(path, name: str, spec, policies: dict) -> str | None:
    """What the operator would find wrong in the app with its policy (the policy's bounds outside the app's range),
    or None; a policyRef is found in `policies` (checked before)."""
    from elastream.local.manifest import with_policy
    from elastream.policy_config import parallelism_bounds

    app = with_policy(path, name, spec, policies)
    named = {"inline": "its inline policy", "default": "the default policy"}.get(app.policy_name,
                                                                                 f"ElasticityPolicy/{app.policy_name}")
    try:
        parallelism_bounds(app.policy, spec)
    except UserError as err:
        return f"{named}: {err}"
    return None


def _objects(docs: list) -> list:
    """The documents, with the items of each `kind: List` (what `kubectl get -o yaml` writes) in its place."""
    out = []
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            out += doc["items"]
        else:
            out.append(doc)
    return out


def _foreign(doc) -> bool:
    """An object of another API (apiVersion and kind both given, neither elastream's): not ours to check."""
    from elastream.api import GROUP
    from elastream.api.manifests import SPEC_MODELS

    if not isinstance(doc, dict):
        return False
    api, kind = doc.get("apiVersion"), doc.get("kind")
    return (isinstance(api, str) and isinstance(kind, str) and kind not in SPEC_MODELS
            and api.split("/")[0] != GROUP)


def _name(doc: dict) -> str:
    metadata = doc.get("metadata")
    return shorten(metadata.get("name"), 64) if isinstance(metadata, dict) else "?"
