"""`elastream calibrate`: fit the simulator's Spark job to a real local run and replay the run in it."""
from __future__ import annotations

import argparse
from pathlib import Path

from elasticity import json_report
from elastream.arg_types import output_file, plot_file


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "calibrate",
        help="fit the simulator's Spark job to a real run and compare the two",
        description="Fit the simulator's micro-batch job (capacity per executor, fixed costs per batch, how long "
        "added executors take to arrive and warm up, the pause of a rescale) to a run made by `elastream run "
        "APP --report DIR` of a Spark app with a generator source; replay the run's load, from its first commit, "
        "under the app's policy in the simulator; print the fitted figures and real against simulated, and draw both to DIR/calibration.png.",
    )
    p.add_argument("app", type=Path, help="the StreamApp YAML the run ran (its trigger, executors and policy)")
    p.add_argument("report", type=Path, help="the run's report directory (elastream run --report)")
    p.add_argument("--json", type=output_file, metavar="FILE", help="also write the fitted figures and the comparison as JSON")
    p.add_argument("--plot", type=plot_file, metavar="FILE.png", help="where to draw (default: REPORT/calibration.png)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from elastream.local import manifest
    from elastream.local.calibrate import compare, plot

    app = manifest.load(args.app)
    comparison = compare(app, args.report)
    fitted = comparison.calibration.summary()
    print(f"simulator fitted to {args.report} ({fitted['steady_batches']} steady batches, "
          f"{fitted['warmup_batches']} after a scale-out):")
    for name, value in fitted.items():
        if name not in ("steady_batches", "warmup_batches", "defaulted"):
            note = " (not measured: the simulator's default)" if name in fitted["defaulted"] else ""
            print(f"  {name:<20} {value}{note}")
    rows = comparison.table()
    print(f"\n  {'':<24} {'real':>10} {'simulated':>10}")
    for name, real, sim in rows:
        print(f"  {name:<24} {real:>10} {sim:>10}")
    path = args.plot or args.report / "calibration.png"
    plot(comparison, Path(path), f"{app.name}: real run and its replay in the calibrated simulator "
         f"({comparison.simulated.policy} policy)")
    print(f"\nplot: {path}")
    if args.json:
        Path(args.json).write_text(json_report.dumps({"fitted": fitted, "comparison": {n: {"real": r, "simulated": s}
                                                                                for n, r, s in rows}}))
    return 0
