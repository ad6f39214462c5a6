"""`elastream tune`: search a StreamApp's Spark configuration on its real local PySpark job."""
from __future__ import annotations

import argparse
from pathlib import Path

from elastream.arg_types import output_dir, random_seed
from elastream.errors import UserError
from elastream.interrupts import interruptible

METHODS = ("bo", "random", "hillclimb")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "tune",
        help="tune a StreamApp's Spark configuration on its real PySpark job, on this machine",
        description="Search the StreamApp's Spark configuration (trigger interval, shuffle partitions, max records "
        "per trigger, executor cores and memory, state store, locality wait) for the lowest p99 latency that keeps "
        "up with the load. Each evaluation runs the real job on a standalone Spark cluster kept up between "
        "evaluations, at the peak of the StreamApp's own load with its most executors; a configuration that fails "
        "or falls behind is recorded as failed and never tried again. The first evaluation is the StreamApp's own "
        "configuration. Writes DIR/report.json, DIR/convergence.png and DIR/best-patch.yaml (a merge patch: "
        "kubectl patch streamapp NAME --type merge --patch-file DIR/best-patch.yaml).",
    )
    p.add_argument("file", type=Path, metavar="FILE", help="YAML with a Spark StreamApp (a generator source)")
    p.add_argument("--budget", type=int, default=12, metavar="N", help="evaluations, the default one included (default 12)")
    p.add_argument("--method", choices=METHODS, default="bo",
                   help="bo: random-forest surrogate with expected improvement; random; hillclimb: Latin-hypercube "
                   "starts and hill climbing (default bo)")
    p.add_argument("--report", type=output_dir, default="out/tune", metavar="DIR", help="where results go (default out/tune)")
    p.add_argument("--rate", type=float, metavar="RECORDS_PER_S",
                   help="the load of every evaluation (default: the generator's peakRate, else its rate)")
    p.add_argument("--executors", type=int, metavar="N", help="executors of every evaluation (default: executors.max)")
    p.add_argument("--measure", type=float, default=30.0, metavar="SECONDS",
                   help="seconds of micro-batches measured per evaluation, after the start-up backlog (default 30)")
    p.add_argument("--seed", type=random_seed, default=0, help="the optimiser's random seed (default 0)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from elastream.tune.session import TuneSettings, tune_app

    if args.budget < 1:
        raise UserError("--budget must be at least 1")
    if args.measure <= 0 or (args.rate is not None and args.rate <= 0) or (args.executors is not None and args.executors < 1):
        raise UserError("--measure and --rate must be positive, --executors at least 1")
    settings = TuneSettings(args.budget, args.method, args.report, args.rate, args.executors, args.measure, args.seed)
    with interruptible():
        report = tune_app(args.file, settings)
    return 0 if report.get("best") else 1
