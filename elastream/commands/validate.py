"""`elastream validate`: check StreamApp / ElasticityPolicy manifests as the API server would."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from elastream.errors import UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "validate",
        help="check StreamApp and ElasticityPolicy manifests without a cluster",
        description="Check manifests with the same rules the CRDs give the API server (types, names, limits, "
        "cross-field rules); each problem is printed as field.path: message. A policyRef to an ElasticityPolicy "
        "found in none of the files is a warning. Exit status 1 when any manifest is invalid, 2 when a file cannot be read as YAML.",
    )
    p.add_argument("files", nargs="+", type=Path, metavar="FILE", help="YAML manifests (several documents allowed)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from elastream.api.manifests import ManifestError, parse_manifest
    from elastream.api.safe_yaml import read_documents

    failures, unreadable, policies, refs = 0, 0, set(), []
    for path in args.files:
        try:
            docs = read_documents(path)
        except UserError as err:
            unreadable += 1
            print(err, file=sys.stderr)
            continue
        for doc in docs:
            try:
                kind, name, spec = parse_manifest(doc)
            except ManifestError as err:
                failures += 1
                print(f"{path}: {err}")
                continue
            print(f"{path}: {kind}/{name} is valid")
            if kind == "ElasticityPolicy":
                policies.add(name)
            elif spec.policy_ref is not None:
                refs.append((path, name, spec.policy_ref.name))
    for path, app, policy in refs:
        if policy not in policies:
            print(f"{path}: warning: StreamApp/{app}: spec.policyRef.name: ElasticityPolicy {policy!r} is in none of "
                  "the files given; the operator holds the app (Ready=False, reason PolicyNotFound) until it exists")
    return 2 if unreadable else 1 if failures else 0
