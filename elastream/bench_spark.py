"""`elastream bench spark`: scaling policies side by side on a real Spark job — the same app under the same load,
once per policy, one after another, each an `elastream run` (its own Spark cluster, and for Nexmark its own Kafka
broker and the same seeded events).

Per policy, from the run's samples (every 2 s) and report:
- slo_violation_s: the time the job's p99 latency was above the policy's latencyTarget;
- executor_seconds: executors running, integrated over the run (the cost);
- rescales: the rescales realized; p99_latency_s: the 99th percentile of the p99 samples;
- missing, duplicates: the sink against the generator (Nexmark: against the batch answer).
"""
from __future__ import annotations

import argparse
import io
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import yaml

from elasticity import json_report

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
APPS = {"nexmark-q5": EXAMPLES / "nexmark-q5.yaml", "wordcount": EXAMPLES / "wordcount.yaml"}
POLICIES = ("ds2", "elastream", "hpa", "mestream", "rl")
FIGURES = Path(__file__).resolve().parent.parent / "docs" / "figures"


def manifest(app: str, policy: str, load: str) -> list[dict]:
    """The example of `app`, its policy's algorithm set to `policy`, its load shape to `load` (step: the example's
    own; sinusoid: between its rate and peak rate, one cycle per two periods; a CSV file: that trace)."""
    docs = [d for d in yaml.safe_load_all(APPS[app].read_text()) if d]
    for doc in docs:
        if doc["kind"] == "ElasticityPolicy":
            doc["spec"]["algorithm"] = policy
        elif doc["kind"] == "StreamApp":
            source = doc["spec"]["spark"]["source"]
            fields = source[source["type"]]
            if load == "sinusoid":
                fields["profile"] = "sinusoid"
                fields["period"] = f"{2 * _seconds(fields.get('period', '60s')):g}s"
            elif load != "step":
                fields.update(profile="trace", trace=str(Path(load).resolve()))
    return docs


def _seconds(duration: str) -> float:
    from spark_apps.profile import parse_duration

    return parse_duration(duration)


def score(report_dir: Path, latency_target_s: float) -> dict:
    """The comparison's figures from one run's report.json and timeline.json."""
    report = json.loads((report_dir / "report.json").read_text())
    samples = json.loads((report_dir / "timeline.json").read_text())
    violation = executor_s = 0.0
    for a, b in zip(samples, samples[1:]):
        dt = b["t"] - a["t"]
        if (a.get("latency_p99_s") or 0.0) > latency_target_s:
            violation += dt
        executor_s += dt * sum((a.get("parallelism") or {}).values())
    p99s = [s["latency_p99_s"] for s in samples if s.get("latency_p99_s") is not None]
    return {"slo_violation_s": round(violation, 1), "executor_seconds": round(executor_s, 1),
            "rescales": len(report["rescales"]),
            "p99_latency_s": round(float(np.percentile(p99s, 99)), 2) if p99s else None,
            "missing": report["missing"], "duplicates": report["duplicates"],
            "records": report["records_produced"], "duration_s": report["duration_s"]}


def run(policies: list[str], app: str, load: str, duration_s: float, workdir: Path) -> dict:
    from elastream.local.run import run as local_run

    runs, target = {}, None
    for policy in policies:
        path = workdir / f"{policy}.yaml"
        path.write_text(yaml.safe_dump_all(manifest(app, policy, load)))
        report_dir = workdir / policy
        print(f"\n== {app} under {policy} ({duration_s:.0f} s of {load} load) ==", flush=True)
        local_run(path, duration_s, report_dir, out=io.StringIO())  # the per-run log stays in its report
        target = _latency_target(path)
        runs[policy] = {**score(report_dir, target), "report": str(report_dir)}
        print(json.dumps({k: v for k, v in runs[policy].items() if k != "report"}), flush=True)
    return {"app": app, "load": load, "duration_s": duration_s, "latency_target_s": target, "runs": runs}


def _latency_target(path: Path) -> float:
    from elastream.local import manifest as local_manifest
    from elastream.policy_config import to_policy_config

    app = local_manifest.load(path)
    return to_policy_config(app.policy, app.spec).latency_target_s


def table(result: dict) -> str:
    lines = ["| policy | SLO violation (s) | executor-seconds | rescales | p99 latency (s) | missing | duplicates |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for policy, r in result["runs"].items():
        lines.append(f"| {policy} | {r['slo_violation_s']:.0f} | {r['executor_seconds']:.0f} | {r['rescales']} | "
                     f"{r['p99_latency_s'] if r['p99_latency_s'] is not None else '–'} | {r['missing']} | "
                     f"{r['duplicates']} |")
    return "\n".join(lines)


def bench_main(args: argparse.Namespace) -> int:
    from elastream.errors import UserError

    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    unknown = [p for p in policies if p not in POLICIES]
    if not policies or unknown:
        raise UserError(f"--policies: unknown {', '.join(unknown) or '(none given)'}; choose from {', '.join(POLICIES)}")
    if args.load not in ("step", "sinusoid") and not Path(args.load).is_file():
        raise UserError(f"--load: {args.load!r} is neither step, sinusoid nor a CSV file")
    if not 30 <= args.duration <= 3600:
        raise UserError(f"--duration must be between 30 and 3600 s, not {args.duration:g}")
    with tempfile.TemporaryDirectory(prefix="elastream-bench-spark-") as tmp:
        result = run(policies, args.app, args.load, args.duration, Path(tmp))
        figures = {}
        if args.docs:
            FIGURES.mkdir(parents=True, exist_ok=True)
            for policy, r in result["runs"].items():
                figure = FIGURES / f"bench-spark-{args.app}-{policy}.png"
                shutil.copy(Path(r["report"]) / "timeline.png", figure)
                figures[policy] = figure.name
    for r in result["runs"].values():
        r.pop("report")
    text = table(result)
    print("\n" + text)
    if args.json:
        Path(args.json).write_text(json_report.dumps({"runs": result["runs"], **{k: v for k, v in result.items()
                                                                          if k != "runs"}}))
    plots = "".join(f"\n![{p}](figures/{name})" for p, name in figures.items())
    args.docs_markdown = (
        "## Spark — policies side by side on a real job\n\n"
        f"Command: `elastream bench spark --policies {','.join(policies)} --app {args.app} --load {args.load} "
        f"--duration {args.duration:g} --docs` — each policy runs the same job (`examples/{APPS[args.app].name}`, "
        f"its policy's algorithm replaced) under the same {args.load} load for {args.duration:g} s, one after "
        "another, each on its own local Spark cluster (and Kafka broker); SLO violation = time with p99 above the "
        f"latency target ({result['latency_target_s']:g} s), executor-seconds = executors integrated over the run, "
        f"sampled every 2 s.\n\n{text}\n{plots}\n")
    return 0
