"""`elastream simulate`: drive the elasticity core with a simulated streaming job."""
from __future__ import annotations

import argparse

from elastream.arg_types import output_file, plot_file, random_seed


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "simulate",
        help="simulate a streaming job under a load and an elasticity policy",
        description="Simulate a streaming job under a load scenario or a CSV trace (columns time,rate), "
        "driven by an elasticity policy; print a summary and optionally write JSON and a timeline PNG.",
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--scenario", help="a built-in load scenario, or a family of the broad benchmark suite drawn "
                     "from a seed as FAMILY-SEED (web-day-3); an unknown name lists the valid ones")
    src.add_argument("--trace", metavar="FILE.csv",
                     help="a CSV load trace with header time,rate, or - to read it from standard input (time in "
                     "seconds or ISO-8601; at most 500000 rows, 7 days and 32 MiB: a larger trace is refused, naming "
                     "the limit, as soon as the reading passes it)")
    p.add_argument("--policy", default=None,
                   help="static | hpa | ds2 | mestream | elastream | rl | oracle (default: the --policy-file's "
                   "spec.algorithm, else elastream)")
    p.add_argument("--policy-file", metavar="FILE.yaml",
                   help="simulate with the settings of your manifests (what you would kubectl apply): a file with "
                   "one StreamApp gives the policy the operator would give it (inline, referenced in the file, or "
                   "the default) and its parallelism bounds; a file with no StreamApp, its one ElasticityPolicy. "
                   "Latency target, evaluation interval, windows, bounds, step limits, scale-down delay, rescale "
                   "budget and catch-up duration apply; advisor mode is simulated as auto, to show what the policy "
                   "would do. An invalid manifest is refused field by field, as `elastream validate` does")
    p.add_argument("--seed", type=random_seed, default=None,
                   help="random seed of the load noise and capacity noise (default: the scenario's fixed seed)")
    p.add_argument("--start", choices=["as-deployed", "right-sized"], default="as-deployed",
                   help="initial sizing, the same for every policy: each stage at 70%% utilization of the first "
                   "rate, within its bounds (as-deployed, the default) or the oracle's first-step parallelism "
                   "(right-sized)")
    p.add_argument("--json", type=output_file, metavar="FILE", help="write the summary as JSON to FILE")
    p.add_argument("--plot", type=plot_file, metavar="FILE.png", help="draw the timeline (rate, latency, parallelism) to FILE.png")
    p.add_argument("--decisions", action="store_true",
                   help="list every rescale the policy made: its time, the parallelism before and after, whether it "
                   "reversed the one before within 15 minutes, and the policy's reason; then each run of evaluations "
                   "held at the bounds, for the hour's rescale budget, for an ineffective scale-up or by the policy "
                   "itself (not enough history), with its reason")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from elasticity.simulation.cli import simulate_main  # heavy imports only when used

    config = None
    if getattr(args, "policy_file", None):
        from elastream.local.manifest import load_policy
        from elastream.policy_config import policy_config_alone, to_policy_config

        name, spec, app = load_policy(args.policy_file)
        config = to_policy_config(spec, app) if app is not None else policy_config_alone(spec)
        if config.mode == "advisor":
            print(f"policy {name} is in advisor mode: simulated as auto, to show what it would do")
            config.mode = "auto"
        args.policy = args.policy or config.algorithm
        print(f"settings of policy {name} from {args.policy_file}")
    return simulate_main(args, config)
