"""`elastream crds`: write the CRDs generated from the API models."""
from __future__ import annotations

import argparse

from elastream.arg_types import output_dir


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "crds",
        help="write the CustomResourceDefinitions generated from the API models",
        description="Generate the StreamApp and ElasticityPolicy CRDs from the pydantic models and write them.",
    )
    p.add_argument("--out", type=output_dir, default=None, help="directory to write to (default: crds/ and charts/elastream/crds/ of the project)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from elastream.api import crdgen

    for path in crdgen.write(*([args.out] if args.out else [])):
        print(path)
    return 0
