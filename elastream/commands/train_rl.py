"""`elastream train-rl`: train the `rl` policy in the simulator and write its weights."""
from __future__ import annotations

import argparse
import math
import time

from elastream.arg_types import output_file, positive_int, random_seed


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "train-rl",
        help="train the rl scaling policy in the simulator (training load families only) and write its weights",
        description="Train the rl policy on simulated training episodes (generated load families with training "
        "seeds, never the benchmark's scenarios): imitate a teacher policy (logistic regression) as a start, then "
        "improve on the reward by cross-entropy-method policy search; write the weights. "
        "Deterministic: the same arguments give the same weights. The defaults reproduce the shipped weights.",
    )
    p.add_argument("--seeds", type=positive_int, default=1, metavar="N",
                   help="episodes per training family (default 1)")
    p.add_argument("--iterations", type=positive_int, default=10, metavar="N", help="CEM iterations (default 10)")
    p.add_argument("--population", type=positive_int, default=12, metavar="N",
                   help="parameter vectors tried per iteration (default 12)")
    p.add_argument("--elite", type=positive_int, default=3, metavar="N",
                   help="best vectors the search refits to (default 3)")
    p.add_argument("--teacher", default="ds2", metavar="POLICY",
                   help="the policy whose decisions the search starts from, by imitation (default ds2)")
    p.add_argument("--spread", type=float, default=0.5, metavar="SD",
                   help="initial standard deviation of the search around that start (default 0.5)")
    p.add_argument("--search-seed", type=random_seed, default=0, metavar="S", help="seed of the search's sampling (default 0)")
    p.add_argument("--families", metavar="LIST",
                   help="comma-separated training families (default: all; an unknown name lists them)")
    p.add_argument("--out", type=output_file, default=None,
                   help="where to write the weights (default: the shipped file, elasticity/policies/rl_weights.json)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.elite > args.population:
        print(f"error: --elite {args.elite} is more than --population {args.population}: the search refits to the "
              "best of the vectors it tried")
        return 2
    if not (math.isfinite(args.spread) and args.spread > 0):
        print(f"error: --spread {args.spread} must be a positive standard deviation")
        return 2
    from elasticity.policies.rl import WEIGHTS_PATH
    from elasticity.policies.rl_train import train

    t0 = time.perf_counter()
    families = [f.strip() for f in args.families.split(",") if f.strip()] if args.families else None
    weights = train(seeds=args.seeds, iterations=args.iterations, population=args.population, elite=args.elite,
                    seed=args.search_seed, families=families, teacher=args.teacher, spread=args.spread,
                    progress=print)
    out = args.out or WEIGHTS_PATH
    weights.save(out)
    t = weights.training
    print(f"wrote {out}: fitness {t['fitness_per_hour']:.1f} per episode-hour over {t['episodes']} episodes "
          f"({t['evaluations']} evaluations, {time.perf_counter() - t0:.0f} s)")
    return 0
