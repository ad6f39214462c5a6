"""`elastream bench`: the benchmarks whose tables go to docs/benchmarks.md."""
from __future__ import annotations

import argparse

from elastream.arg_types import load_scale, output_dir, output_file, positive_int


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("bench", help="run a benchmark and write its table to docs/benchmarks.md")
    targets = p.add_subparsers(dest="target", metavar="TARGET", required=True)

    e = targets.add_parser(
        "elasticity",
        help="every scaling policy on several load scenarios, side by side with an oracle and the "
             "rescale-budget floor (the least any foresighted schedule with as many rescales could spend)",
    )
    e.add_argument("--suite", choices=["main", "broad", "traces"], default="main",
                   help="main: the built-in scenarios (default); broad: parameterised load families (flash crowds, "
                        "sawtooth ramps, a compressed week, a web-like day, slow growth, on/off bursts, rare "
                        "spikes, a step down and back up) over many seeds, plus the built-ins, judged per family; "
                        "traces: the same shapes as CSV traces from other generators (rows every 5-60 s, other noise "
                        "and magnitudes; elasticity/simulation/trace_set.py), judged the same way")
    e.add_argument("--traces", metavar="DIR",
                   help="judge the policies on your own CSV traces instead: every DIR/*.csv (header time,rate) is "
                        "run as `elastream simulate --trace` runs it, and traces named SHAPE-ANYTHING.csv are judged "
                        "together as a family (and it says how often a set of one trace per family, drawn from them, "
                        "meets each criterion); leaves docs/benchmarks.md as it is")
    e.add_argument("--write-traces", type=output_dir, metavar="DIR",
                   help="write the --suite traces set to DIR as SHAPE-VARIANT.csv (to read, plot or simulate one) "
                        "and stop")
    e.add_argument("--seeds", choices=["reporting", "tuning", "tuning-wide", "check"],
                   help="with --suite broad: the seeds to draw the families from (default reporting, 100-105; "
                        "defaults are chosen on tuning seeds only: tuning, 0-3, quick, and tuning-wide, 0-9 and 30-49, "
                        "to weigh them; check: 10-29, a wider sample no default was chosen on either, to read the "
                        "reporting verdicts' spread)")
    e.add_argument("--policies", metavar="LIST",
                   help="with --suite broad or traces: only these policies, comma-separated (elastream, ds2 and "
                        "oracle always run: the verdicts need them); a partial run leaves docs/benchmarks.md as it is")
    e.add_argument("--set", action="append", metavar="KNOB=VALUE",
                   help="with --suite broad or traces, for tuning: run every policy with this PolicyConfig knob set "
                   "(elasticity/config.py; repeatable, e.g. --set elastream_min_saving=0.25); leaves "
                   "docs/benchmarks.md as it is")
    e.add_argument("--scale", type=load_scale, metavar="F",
                   help="with --suite broad: every family's load × F (default 1): the same shapes at another "
                   "magnitude, run by a job sized for it (at 0.2 a stage has a few instances); no built-ins unless "
                   "1; its table is a section of its own in docs/benchmarks.md")
    e.add_argument("--latency-model", choices=["stationary", "transient"],
                   help="with --suite broad: how the simulated jobs' queueing delay follows the load (default "
                   "transient: each instance's queue follows the load over its relaxation time, so a short overload "
                   "costs what it queues; stationary: the M/M/1 sojourn at each second's utilization, as if it had "
                   "lasted — the model before 2026-11-27); stationary leaves docs/benchmarks.md as it is")
    e.add_argument("--jobs", type=positive_int, default=1, metavar="N",
                   help="scenarios run at once, in N processes (default 1; the results do not depend on it)")
    e.add_argument("--json", type=output_file, metavar="FILE", help="also write the results as JSON")
    e.add_argument("--no-docs", action="store_true", help="do not rewrite docs/benchmarks.md")
    e.set_defaults(handler=_run_elasticity)

    pl = targets.add_parser(
        "placement",
        help="reproduce Table 1 of the GA placement paper (seed 001): our algorithms against the baselines",
    )
    pl.add_argument("--seeds", type=int, default=20, help="random instances per experiment (default 20)")
    pl.add_argument("--seed-base", type=int, default=0, help="first seed (default 0)")
    pl.add_argument("--experiments", metavar="LIST", type=_experiment_list,
                    help='experiments to run, e.g. "1-3" or "4,7,8" (default 1-7, Table 1; 8 is ours: experiment 4 '
                         "at 1000 operators on 500 nodes)")
    pl.add_argument("--period", choices=["fixed", "random"], default="fixed",
                    help="load periods: fixed c = 40 (the protocol) or random c ~ U[20, 60] (sensitivity run)")
    pl.add_argument("--algorithms", metavar="LIST", help="comma-separated algorithms (default: all)")
    pl.add_argument("--time-limit", type=float, metavar="SECONDS", help="elastream's time budget per instance")
    pl.add_argument("--json", type=output_file, metavar="FILE", help="also write the results as JSON")
    pl.add_argument("--no-docs", action="store_true", help="do not rewrite docs/benchmarks.md")
    pl.set_defaults(handler=_run_placement)

    r = targets.add_parser(
        "rescale",
        help="on a cluster (current KUBECONFIG), against a running managed StreamApp and the operator: from a "
             "scaling decision (spec.replicas written through the scale subresource) to the new executor pod's "
             "first task, and the scale-in back; with the job's p99 around each rescale",
    )
    r.add_argument("--namespace", metavar="NS", help="the StreamApp's namespace (default: the context's, or default)")
    r.add_argument("--app", metavar="NAME", help="the StreamApp (default: the only one in the namespace)")
    r.add_argument("--repeats", type=int, default=3, metavar="N", help="scale-out/scale-in pairs (default 3)")
    r.add_argument("--from", dest="base", type=int, metavar="N",
                   help="executors to scale out from and back to (default spec.spark.executors.min)")
    r.add_argument("--timeout", type=float, default=180.0, metavar="SECONDS",
                   help="longest wait for a rescale or for the job to settle (default 180)")
    r.add_argument("--before", type=float, default=30.0, metavar="SECONDS",
                   help="p99 window before each decision; also the pause before it (default 30)")
    r.add_argument("--after", type=float, default=60.0, metavar="SECONDS",
                   help="p99 window after each decision (default 60)")
    r.add_argument("--jitter", type=float, metavar="SECONDS",
                   help="a random pause of up to this long before each decision, so that decisions meet the "
                        "operator's loop at random points (default: the policy's evaluationInterval)")
    r.add_argument("--metrics-url", metavar="URL",
                   help="the driver's /metrics (default http://<driver pod IP>:9108/metrics)")
    r.add_argument("--control-url", metavar="URL",
                   help="the driver's control endpoint (default http://<driver pod IP>:9109); if unreachable, "
                        "the StreamApp's status.currentExecutors is used")
    r.add_argument("--json", type=output_file, metavar="FILE", help="also write every run, event time and p99 sample as JSON")
    r.add_argument("--markdown", type=output_file, metavar="FILE", help="also write the tables as a Markdown section")
    r.add_argument("--docs", action="store_true",
                   help="write the 'rescale' section of docs/benchmarks.md (a cluster benchmark: off by default)")
    r.set_defaults(handler=_run_rescale)

    o = targets.add_parser(
        "operator",
        help="on a cluster (current KUBECONFIG; KWOK nodes are enough): N attached StreamApps and one operator "
             "process; the time until every app is evaluated, evaluations/s, decision latency, the operator's RSS "
             "and CPU, API-server requests per evaluation; a run per --slow-fractions value, side by side",
    )
    o.add_argument("--apps", type=int, default=1000, metavar="N", help="StreamApps per run (default 1000)")
    o.add_argument("--interval", type=float, default=30.0, metavar="SECONDS",
                   help="the policies' evaluationInterval (default 30, the policy default)")
    o.add_argument("--slow-fractions", default="0,0.1", metavar="LIST",
                   help="one run per value: the fraction of apps whose Prometheus and control endpoint hang "
                        "(default 0,0.1)")
    o.add_argument("--window", type=float, metavar="SECONDS",
                   help="steady window after the first round (default 3 intervals, at least 60 s)")
    o.add_argument("--first-round-limit", type=float, default=600.0, metavar="SECONDS",
                   help="longest wait for every app to be evaluated once (default 600)")
    o.add_argument("--log-dir", type=output_dir, metavar="DIR", help="where the operator logs go (default: a new temporary folder)")
    o.add_argument("--json", type=output_file, metavar="FILE", help="also write the results as JSON")
    o.add_argument("--docs", action="store_true",
                   help="write the 'operator' section of docs/benchmarks.md (a cluster benchmark: off by default)")
    o.set_defaults(handler=_run_operator)

    s = targets.add_parser(
        "storm-rebalance",
        help="on a local Storm cluster (no Kubernetes): what each Nimbus rebalance costs — layout time, the sink's "
             "throughput gap, tuples replayed — beside the simulator's storm-rebalance pause",
    )
    s.add_argument("--repeats", type=int, default=3, metavar="N",
                   help="rounds of executors out/in and workers out/in (default 3)")
    s.add_argument("--rate", type=float, default=20.0, metavar="R", help="records/s offered (default 20)")
    s.add_argument("--json", type=output_file, metavar="FILE", help="also write every rebalance as JSON")
    s.add_argument("--docs", action="store_true",
                   help="write the 'storm-rebalance' section of docs/benchmarks.md (off by default)")
    s.set_defaults(handler=_run_storm_rebalance)

    sp = targets.add_parser(
        "storm-placement",
        help="on a local Storm cluster with several supervisors (no Kubernetes): elastream's ETW/WTN plan, applied "
             "by its Nimbus scheduler, against Storm's default scheduler — tuples/s between workers and between "
             "nodes, complete latency",
    )
    sp.add_argument("--rounds", type=int, default=2, metavar="N",
                    help="rounds of (default layout, then the plan made from its rates) (default 2)")
    sp.add_argument("--rate", type=float, default=40.0, metavar="R", help="records/s offered (default 40)")
    sp.add_argument("--window", type=float, default=30.0, metavar="S",
                    help="seconds each layout is measured for (default 30)")
    sp.add_argument("--workers", type=int, default=4, metavar="W", help="the topology's workers (default 4)")
    sp.add_argument("--supervisors", type=int, default=2, metavar="N", help="supervisors (default 2)")
    sp.add_argument("--slots", type=int, default=3, metavar="N", help="slots per supervisor (default 3)")
    sp.add_argument("--json", type=output_file, metavar="FILE", help="also write every measured layout as JSON")
    sp.add_argument("--docs", action="store_true",
                    help="write the 'storm-placement' section of docs/benchmarks.md (off by default)")
    sp.set_defaults(handler=_run_storm_placement)

    nx = targets.add_parser(
        "nexmark-paths",
        help="on this machine (no Kubernetes): Nexmark q1 and q5 read through Spark's own Kafka connector and through "
             "elastream's Python Kafka source, side by side — events/s per task slot",
    )
    nx.add_argument("--events", type=int, default=400_000, metavar="N", help="Nexmark events in the topic (default 400000)")
    nx.add_argument("--batch", type=int, default=50_000, metavar="N", help="most records per micro-batch (default 50000)")
    nx.add_argument("--repeats", type=int, default=3, metavar="N", help="runs per query and path (default 3)")
    nx.add_argument("--seed", type=int, default=1, metavar="S", help="the events' seed (default 1)")
    nx.add_argument("--docs", action="store_true",
                    help="write the 'nexmark-paths' section of docs/benchmarks.md (off by default)")
    nx.set_defaults(handler=_run_nexmark_paths)

    sk = targets.add_parser(
        "spark",
        help="scaling policies side by side on a real Spark job (no Kubernetes): the same app under the same load, "
             "once per policy, each an `elastream run` — SLO violation, executor-seconds, rescales, p99, missing "
             "and duplicates",
    )
    sk.add_argument("--policies", default="ds2,elastream", metavar="LIST",
                    help="comma-separated: ds2, elastream, hpa, mestream, rl (default ds2,elastream)")
    sk.add_argument("--app", choices=["nexmark-q5", "wordcount"], default="nexmark-q5",
                    help="the example to run (default nexmark-q5: a Kafka broker and Nexmark events)")
    sk.add_argument("--load", default="step", metavar="step|sinusoid|FILE.csv",
                    help="the load's shape: the example's step (default), a sinusoid between its rates, or a trace")
    sk.add_argument("--duration", type=float, default=300.0, metavar="SECONDS",
                    help="seconds of load per policy (default 300); each run then drains")
    sk.add_argument("--json", type=output_file, metavar="FILE", help="also write {\"runs\": {POLICY: {...}}} as JSON")
    sk.add_argument("--docs", action="store_true",
                    help="write the 'spark' section of docs/benchmarks.md and a timeline PNG per policy (off by "
                         "default)")
    sk.set_defaults(handler=_run_spark)

    t = targets.add_parser(
        "tuning",
        help="configuration tuning: Bayesian optimisation (random-forest surrogate, expected improvement) against "
             "random search and Latin-hypercube hill climbing, at equal budgets, on response surfaces that behave "
             "like a Spark streaming job's configuration, one of them fitted from a real `elastream tune` run "
             "(minutes; no Spark needed)",
    )
    t.add_argument("--seeds", type=int, default=20, metavar="N", help="runs per problem and method (default 20)")
    t.add_argument("--seed-base", type=int, default=100, metavar="S",
                   help="first seed (default 100; seeds 0-29 were used while building the optimisers)")
    t.add_argument("--budget", type=int, default=150, metavar="N", help="evaluations per run (default 150)")
    t.add_argument("--methods", default="bo,random,hillclimb", metavar="LIST",
                   help="comma-separated: bo, random, hillclimb (default: all three)")
    t.add_argument("--problems", metavar="LIST",
                   help="comma-separated: wordcount, stateful-join, etl-remote-data, wordcount-real-fit (default: all)")
    t.add_argument("--json", type=output_file, metavar="FILE", help="also write the results (and every run's best-so-far) as JSON")
    t.add_argument("--no-docs", action="store_true", help="do not rewrite docs/benchmarks.md")
    t.set_defaults(handler=_run_tuning)

    c = targets.add_parser(
        "consolidation",
        help="on a cluster's real nodes (operator installed by Helm with its placement webhook): N managed Spark "
             "apps whose loads peak at different times, placed by the default scheduler, then by the operator's "
             "plan — nodes used and node-time over capacity for both",
    )
    c.add_argument("--namespace", default="default", help="where the apps run (default: default)")
    c.add_argument("--apps", type=int, default=3, metavar="N", help="StreamApps, one executor each (default 3)")
    c.add_argument("--prefix", default="consolidation", help="the apps' names: PREFIX-1..N (default consolidation)")
    c.add_argument("--rate", type=float, default=100.0, metavar="R", help="low step of the load, records/s (100)")
    c.add_argument("--peak-rate", type=float, default=1500.0, metavar="R", help="high step, records/s (1500)")
    c.add_argument("--period", type=float, default=60.0, metavar="S", help="each step's length, seconds (60)")
    c.add_argument("--window", type=float, default=120.0, metavar="S", help="seconds each layout is measured (120)")
    c.add_argument("--executor-request", default="500m", help="each executor's CPU request (default 500m)")
    c.add_argument("--driver-request", default="250m", help="each driver's CPU request (default 250m)")
    c.add_argument("--claim", default="wordcount-data",
                   help="a ReadWriteMany claim for checkpoints (default: the example's, examples/kubernetes/storage.yaml)")
    c.add_argument("--image", default="ghcr.io/elastream/spark-runner:0.1.0", help="the runner image")
    c.add_argument("--prometheus", metavar="URL",
                   help="Prometheus as this machine reaches it (default: the monitoring namespace's pod IP)")
    c.add_argument("--prometheus-in-cluster", default="http://prometheus.monitoring.svc:9090", metavar="URL",
                   help="Prometheus as the operator reaches it (default http://prometheus.monitoring.svc:9090)")
    c.add_argument("--plan-timeout", type=float, default=900.0, metavar="S",
                   help="how long to wait for the executors to reach their planned nodes (default 900)")
    c.add_argument("--keep", action="store_true", help="leave the apps and the policy in place")
    c.add_argument("--json", type=output_file, metavar="FILE", help="also write both layouts as JSON")
    c.add_argument("--docs", action="store_true",
                   help="write the 'consolidation' section of docs/benchmarks.md (off by default)")
    c.set_defaults(handler=_run_consolidation)


def _experiment_list(value: str) -> str:
    """--experiments: numbers and ranges separated by commas ("4,7,8", "1-3"); which numbers exist is checked
    by the benchmark."""
    import re

    text = value.replace(" ", "")
    if not re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", text):
        raise argparse.ArgumentTypeError(f"expected numbers or ranges separated by commas, e.g. 4,7,8 or 1-3; "
                                         f"got {value!r}")
    return text


def _run_elasticity(args: argparse.Namespace) -> int:
    if getattr(args, "write_traces", None):
        from elasticity.simulation.trace_set import write_trace_set

        others = [flag for flag, given in (("--traces", getattr(args, "traces", None)),
                                           ("--suite broad", getattr(args, "suite", "main") == "broad"),
                                           ("--seeds", getattr(args, "seeds", None)),
                                           ("--policies", getattr(args, "policies", None)),
                                           ("--set", getattr(args, "set", None)),
                                           ("--scale", getattr(args, "scale", None)),
                                           ("--latency-model", getattr(args, "latency_model", None)),
                                           ("--json", getattr(args, "json", None))) if given]
        if others:
            print(f"error: --write-traces writes the built-in traces set and stops, running nothing: give it alone "
                  f"(not with {', '.join(others)})")
            return 2
        paths = write_trace_set(args.write_traces)
        print(f"wrote {len(paths)} traces to {args.write_traces}")
        return 0
    if getattr(args, "traces", None):
        if getattr(args, "suite", "main") not in ("main", "traces"):
            print(f"error: --traces runs your traces instead of --suite {args.suite}: give one of them")
            return 2
        args.suite = "traces"
    traces = getattr(args, "suite", "main") == "traces"
    allowed = ("policies", "set") if traces else ()  # the options the traces benchmark shares with broad
    for option in ("seeds", "policies", "set", "scale", "latency_model"):
        if getattr(args, option, None) and getattr(args, "suite", "main") != "broad" and option not in allowed:
            print(f"error: --{option.replace('_', '-')} is the broad suite's: give it with --suite broad")
            return 2
    if traces:
        from elasticity.trace_bench import bench_main
        section = "elasticity-traces"
    elif getattr(args, "suite", "main") == "broad":
        args.seeds = args.seeds or "reporting"
        from elasticity.broad_suite import bench_main
        scale = getattr(args, "scale", None) or 1.0
        section = f"elasticity-broad-{args.seeds}" + ("" if scale == 1.0 else f"-x{scale:g}")
    else:
        from elasticity.benchmark import bench_main
        section = "elasticity"
    rc = bench_main(args)
    if rc == 0 and not getattr(args, "no_docs", False):
        from elastream.benchdoc import write_section

        path = write_section(section, args.markdown)
        print(f"\nwrote the {section!r} section of {path}")
    return rc


def _run_placement(args: argparse.Namespace) -> int:
    from elasticity.placement.benchmark import bench_main

    rc = bench_main(args)
    if rc == 0 and not args.no_docs:
        from elastream.benchdoc import write_section

        name, markdown = args.docs_section
        print(f"\nwrote the {name!r} section of {write_section(name, markdown)}")
    return rc


def _docs_bench(module: str, section: str, by_default: bool = False):
    """A handler for a bench whose `bench_main` leaves its markdown in args.docs_markdown, written with --docs (or,
    `by_default`, unless --no-docs)."""
    def handler(args: argparse.Namespace) -> int:
        import importlib

        rc = importlib.import_module(module).bench_main(args)
        if rc == 0 and (not args.no_docs if by_default else args.docs):
            from elastream.benchdoc import write_section

            print(f"\nwrote the {section!r} section of {write_section(section, args.docs_markdown)}")
        return rc
    return handler


_run_rescale = _docs_bench("elastream.bench_rescale.cluster", "rescale")
_run_operator = _docs_bench("elastream.bench_operator.run", "operator")
_run_storm_rebalance = _docs_bench("elastream.bench_storm", "storm-rebalance")
_run_storm_placement = _docs_bench("elastream.bench_storm_placement", "storm-placement")
_run_consolidation = _docs_bench("elastream.bench_consolidation.run", "consolidation")
_run_tuning = _docs_bench("elasticity.tuning.benchmark", "tuning", by_default=True)
_run_spark = _docs_bench("elastream.bench_spark", "spark")
_run_nexmark_paths = _docs_bench("elastream.bench_nexmark_paths", "nexmark-paths")
