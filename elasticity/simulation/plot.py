"""The timeline of a simulation: load, latency against the target, parallelism per stage (matplotlib, Agg)."""
from __future__ import annotations

from pathlib import Path

import numpy as np


def plot_timeline(result, path: str | Path, title: str | None = None) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tl = result.timeline
    minutes = tl.t / 60.0
    fig, axes = plt.subplots(3, 1, figsize=(11, 8), sharex=True, constrained_layout=True)
    ax = axes[0]
    ax.plot(minutes, tl.processed[:, 0], lw=0.6, color="tab:green", alpha=0.6, label="source processed")
    ax.plot(minutes, tl.arrivals, lw=0.6, color="tab:blue", alpha=0.8, label="input rate")
    ax.set_ylabel("records/s")
    ax.legend(loc="upper left", fontsize=8)
    ax = axes[1]
    ax.plot(minutes, tl.latency_p99, lw=0.6, color="tab:red", label="p99 latency")
    ax.axhline(result.latency_target_s, color="black", ls="--", lw=0.8, label=f"target {result.latency_target_s:g}s")
    top = max(result.latency_target_s * 3, float(np.percentile(tl.latency_p99, 99.5)) * 1.1)
    ax.set_ylim(0, top)
    ax.set_ylabel("seconds")
    ax.legend(loc="upper left", fontsize=8)
    ax = axes[2]
    for i, name in enumerate(result.stage_names):
        ax.step(minutes, tl.parallelism[:, i], where="post", lw=1.0, label=name)
    for t in tl.rescale_times:
        ax.axvline(t / 60.0, color="grey", lw=0.4, alpha=0.5)
    ax.set_ylabel("parallelism")
    ax.set_xlabel("minutes")
    ax.legend(loc="upper left", fontsize=8)
    s = result.summary
    fig.suptitle(title or (f"{result.scenario} · {result.policy}: SLO violation {s['slo_violation_s']:.0f}s, "
                           f"p99 {s['p99_latency_s']:.2f}s, {s['executor_seconds']:.0f} executor-s, "
                           f"{s['rescales']} rescales"), fontsize=10)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
