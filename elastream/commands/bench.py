"""`elastream bench`: the benchmarks whose tables go to docs/benchmarks.md."""
from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("bench", help="run a benchmark and write its table to docs/benchmarks.md")
    targets = p.add_subparsers(dest="target", metavar="TARGET", required=True)

    e = targets.add_parser(
        "elasticity",
        help="every scaling policy on several load scenarios, side by side with an oracle and the "
             "rescale-budget floor (the least any foresighted schedule with as many rescales could spend)",
    )
    e.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    e.add_argument("--no-docs", action="store_true", help="do not rewrite docs/benchmarks.md")
    e.set_defaults(handler=_run_elasticity)

    pl = targets.add_parser(
        "placement",
        help="reproduce Table 1 of the GA placement paper (seed 001): our algorithms against the baselines",
    )
    pl.add_argument("--seeds", type=int, default=20, help="random instances per experiment (default 20)")
    pl.add_argument("--seed-base", type=int, default=0, help="first seed (default 0)")
    pl.add_argument("--experiments", metavar="LIST", help='experiments to run, e.g. "1-3" or "4,7" (default all)')
    pl.add_argument("--period", choices=["fixed", "random"], default="fixed",
                    help="load periods: fixed c = 40 (the protocol) or random c ~ U[20, 60] (sensitivity run)")
    pl.add_argument("--algorithms", metavar="LIST", help="comma-separated algorithms (default: all)")
    pl.add_argument("--time-limit", type=float, metavar="SECONDS", help="elastream's time budget per instance")
    pl.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    pl.add_argument("--no-docs", action="store_true", help="do not rewrite docs/benchmarks.md")
    pl.set_defaults(handler=_run_placement)


def _run_elasticity(args: argparse.Namespace) -> int:
    from elasticity.benchmark import bench_main

    rc = bench_main(args)
    if rc == 0 and not getattr(args, "no_docs", False):
        from elastream.benchdoc import write_section

        path = write_section("elasticity", args.markdown)
        print(f"\nwrote the 'elasticity' section of {path}")
    return rc


def _run_placement(args: argparse.Namespace) -> int:
    from elasticity.placement.benchmark import bench_main

    rc = bench_main(args)
    if rc == 0 and not args.no_docs:
        from elastream.benchdoc import write_section

        name, markdown = args.docs_section
        print(f"\nwrote the {name!r} section of {write_section(name, markdown)}")
    return rc
