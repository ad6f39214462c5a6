"""`elastream run`: the main job — a real PySpark job (or Storm topology) rescaled live on this machine, no Kubernetes."""
from __future__ import annotations

import argparse
from pathlib import Path

from elastream.arg_types import output_dir
from elastream.errors import UserError
from elastream.interrupts import interruptible


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "run",
        help="run a StreamApp's job (Spark or Storm) locally and keep it elastic (no Kubernetes)",
        description="Start the StreamApp's engine on this machine (engine: spark — a standalone Spark cluster with "
        "room for the policy's max executors; engine: storm — ZooKeeper, Nimbus and two supervisors from Storm's "
        "Maven Central jars), run its built-in app under the load profile of its generator source, and rescale it "
        "live with the same core, guards and realizer as the operator (Spark: executors; Storm: executors per "
        "component, by Nimbus rebalance). Prints progress and decisions; at the end (or Ctrl-C) stops every "
        "process it started and writes DIR/report.json and DIR/timeline.png.",
    )
    p.add_argument("file", type=Path, metavar="FILE", help="YAML with a StreamApp and its ElasticityPolicy")
    p.add_argument("--duration", type=float, default=300.0, metavar="SECONDS",
                   help="seconds of load; the job then drains what is left (default 300)")
    p.add_argument("--report", type=output_dir, default="out/run", metavar="DIR",
                   help="where report.json, timeline.png and the job's files go (default out/run)")
    p.add_argument("--sample", type=float, default=2.0, metavar="SECONDS", help="progress line interval (default 2)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from elastream.local.run import run as run_local

    if args.duration <= 0:
        raise UserError("--duration must be positive")
    with interruptible():  # Ctrl-C and SIGTERM both end the run cleanly
        report = run_local(args.file, args.duration, args.report, sample_s=args.sample)
    return 0 if report["verified"] or report["interrupted"] else 1
