"""The report of a local run: report.json (exactly-once check, rescales with latency around them) and timeline.png."""
from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

from elasticity import json_report
from elastream.local.manifest import LocalApp

WINDOW_S = 30.0  # latency before / after a rescale: median p99 over this many seconds


def p99_around(samples: list[dict[str, Any]], t: float) -> tuple[float | None, float | None]:
    def median(values):
        values = [v for v in values if v is not None]
        return round(statistics.median(values), 3) if values else None

    before = median(s["latency_p99_s"] for s in samples if t - WINDOW_S <= s["t"] < t)
    after = median(s["latency_p99_s"] for s in samples if t < s["t"] <= t + WINDOW_S)
    return before, after


def write_report(report_dir: Path, app: LocalApp, config, job, timeline, started: float, stopped_at: float,
                 interrupted: bool, drained: bool) -> dict[str, Any]:
    check = job.verify(stopped_at)
    report = {
        "app": app.name,
        "policy": {"name": app.policy_name, "algorithm": config.algorithm, "mode": config.mode},
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "started_epoch_s": round(started, 3),  # what the samples' and rescales' t count from
        "duration_s": round(stopped_at - started, 1),
        "interrupted": interrupted,
        "drained": drained,  # the load ended and the job processed all of it (else: interrupted, or the drain timed out)
        **check,  # records_produced, records_processed, missing, duplicates, and the engine's guarantee
        "rescales": [{**r, **dict(zip(("p99_before_s", "p99_after_s"), p99_around(timeline.samples, r["t"])))}
                     for r in timeline.rescales],
        "decisions": timeline.decisions,
        "samples": len(timeline.samples),
    }
    (report_dir / "report.json").write_text(json_report.dumps(report))
    (report_dir / "timeline.json").write_text(json.dumps(json_report.finite(timeline.samples), allow_nan=False))
    plot_timeline(report_dir / "timeline.png", app.name, timeline, config)
    return report


def plot_timeline(path: Path, title: str, timeline, config) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = timeline.samples
    t = [x["t"] for x in s]
    fig, (ax_rate, ax_lat, ax_exec) = plt.subplots(3, 1, figsize=(10, 8), sharex=True)
    ax_rate.plot(t, [x["input_rate"] for x in s], label="offered (records/s)")
    ax_rate.plot(t, [x["processing_rate"] for x in s], label="processed (records/s)")
    ax_rate.set_ylabel("rate")
    ax_rate.legend(loc="upper left")
    ax_backlog = ax_rate.twinx()
    ax_backlog.plot(t, [x["backlog"] for x in s], color="grey", alpha=0.5, label="backlog")
    ax_backlog.set_ylabel("backlog (records)")
    # Spark measures a p99 latency; Storm only a mean complete latency (emit to full ack)
    key, label = (("latency_p99_s", "p99 latency") if any(x.get("latency_p99_s") is not None for x in s)
                  else ("latency_p50_s", "mean complete latency"))
    ax_lat.plot(t, [x.get(key) for x in s], color="tab:red", label=label)
    ax_lat.axhline(config.latency_target_s, color="tab:red", linestyle=":", label="target")
    ax_lat.set_ylabel("seconds")
    ax_lat.legend(loc="upper left")
    stages = list(dict.fromkeys(n for x in s for n in (x.get("parallelism") or {})))
    for i, name in enumerate(stages):
        color = f"C{i}"
        ax_exec.step(t, [(x.get("parallelism") or {}).get(name) for x in s], where="post", color=color, label=name)
        ax_exec.step(t, [(x.get("target") or {}).get(name) for x in s], where="post", color=color, linestyle="--",
                     alpha=0.6, label=f"{name} target")
    for r in timeline.rescales:
        for ax in (ax_rate, ax_lat, ax_exec):
            ax.axvline(r["t"], color="black", alpha=0.3)
        label = (f"{r['from']}→{r['to']}" if not isinstance(r["to"], dict) else
                 ", ".join(f"{n} {r['from'].get(n)}→{v}" for n, v in r["to"].items() if r["from"].get(n) != v))
        top = r["to"] if not isinstance(r["to"], dict) else max(r["to"].values())
        ax_exec.annotate(label, (r["t"], top), textcoords="offset points", xytext=(3, 3), fontsize=8)
    ax_exec.set_ylabel("parallelism" if len(stages) > 1 else "executors")
    ax_exec.set_xlabel("seconds since start")
    # the range the run used, with room for the legend above it: not the policy's max (64 squashes a run of 1-4)
    used = max([v for x in s for d in (x.get("parallelism") or {}, x.get("target") or {}) for v in d.values()
                if v is not None], default=1)
    ax_exec.set_ylim(0, min(config.max_parallelism, 2 * used) + 1)
    ax_exec.legend(loc="upper left", ncol=min(len(stages), 3) if stages else 1, fontsize=8)
    fig.suptitle(f"{title}: {config.algorithm} policy — rate, latency, parallelism; vertical lines = rescales")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
