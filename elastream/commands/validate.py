"""`elastream validate`: check StreamApp / ElasticityPolicy manifests as the API server would."""
from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from elastream.errors import UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "validate",
        help="check StreamApp and ElasticityPolicy manifests without a cluster",
        description="Check manifests with the same rules the CRDs give the API server; "
        "each problem is printed as field.path: message.",
    )
    p.add_argument("files", nargs="+", type=Path, metavar="FILE", help="YAML manifests (several documents allowed)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from elastream.api.manifests import ManifestError, parse_manifest

    failures = 0
    for path in args.files:
        try:
            docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        except (OSError, yaml.YAMLError) as err:
            raise UserError(f"{path}: {err}") from None
        for doc in docs:
            try:
                kind, name, _ = parse_manifest(doc)
                print(f"{path}: {kind}/{name} is valid")
            except ManifestError as err:
                failures += 1
                print(f"{path}: {err}")
    return 1 if failures else 0
