"""The local control loop: sample the job's metrics, evaluate the policy with the operator's core, rescale through
the engine's realizer (Spark: the runner's control endpoint; Storm: a Nimbus rebalance), print what happens, and
report at the end. The engine runs the job; this loop names none."""
from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from elastream.engines import engine_for
from elastream.engines.base import LocalJob, decision_realized
from elastream.local import manifest
from elastream.local.report import write_report
from elastream.policy_config import to_policy_config
from elasticity.adapters import InMemoryStateStore, SystemClock
from elasticity.autoscaler import JobAutoscaler
from elasticity.model import Decision, fmt_count, fmt_rate
from elasticity.ports import Event

DRAIN_TIMEOUT_S = 180.0  # after the load ends, wait this long for the job to process what is left


@dataclass
class Timeline:
    """What happened, sampled: the report and the plot are drawn from it."""

    samples: list[dict[str, Any]] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    rescales: list[dict[str, Any]] = field(default_factory=list)


class PrintingEventSink:
    def __init__(self, out: TextIO):
        self.out = out

    def emit(self, job: str, event: Event) -> None:
        print(f"  event {event.type} {event.reason}: {event.message}", file=self.out, flush=True)


def run(path: Path, duration_s: float, report_dir: Path | None, sample_s: float = 2.0,
        out: TextIO | None = None) -> dict[str, Any]:
    """Run the app of `path` for `duration_s` seconds of load (then drain); returns the report. `out`: where the
    progress goes (default: sys.stdout as it is at the call, not at import)."""
    out = out if out is not None else sys.stdout
    app = manifest.load(path)
    config = to_policy_config(app.policy, app.spec)
    report_dir = Path(report_dir or tempfile.mkdtemp(prefix="elastream-run-"))
    report_dir.mkdir(parents=True, exist_ok=True)
    engine = engine_for(app.spec)
    job = engine.local_job(app, report_dir / "job", duration_s)
    timeline, interrupted, drained, started = Timeline(), False, False, time.time()
    print(f"elastream run: {app.name} ({engine.name} {engine.describe(app.spec)}), policy {app.policy_name} "
          f"({config.algorithm}, {config.mode}), {engine.unit} {config.min_parallelism}..{config.max_parallelism}, "
          f"{duration_s:.0f}s of load; report in {report_dir}", file=out, flush=True)
    try:
        job.start()
        started = time.time()
        print(f"  {job.describe()}", file=out, flush=True)
        drained = _loop(job, app.name, config, timeline, started, duration_s, sample_s, out)
    except KeyboardInterrupt:
        interrupted = True
        print("\ninterrupted: stopping the job", file=out, flush=True)
    finally:
        stopped_at = time.time()
        job.stop()
    report = write_report(report_dir, app, config, job, timeline, started, stopped_at, interrupted, drained)
    unfinished = (f", {report['unfinished']} unfinished (queued or in flight when the run stopped)"
                  if report.get("unfinished") else "")
    print(f"done: {report['records_processed']} of {report['records_produced']} records processed{unfinished}, "
          f"{report['duplicates']} duplicates, {len(report['rescales'])} rescales; "
          f"{report_dir / 'report.json'}, {report_dir / 'timeline.png'}", file=out, flush=True)
    return report


def _loop(job: LocalJob, name: str, config, timeline: Timeline, started: float, duration_s: float,
          sample_s: float, out: TextIO) -> bool:
    """Sample and evaluate until the job has finished (True: the load ended and drained) or the drain times out."""
    autoscaler = JobAutoscaler(name, config, metrics=job.metrics(), realizer=job.realizer(),
                               store=InMemoryStateStore(), events=PrintingEventSink(out), clock=SystemClock())
    next_eval = time.time() + config.evaluation_interval_s
    deadline = started + duration_s + DRAIN_TIMEOUT_S
    while not job.finished():
        sample = _sample(job, timeline, started, out)
        if time.time() >= deadline:
            return False
        if time.time() >= next_eval:
            next_eval = time.time() + config.evaluation_interval_s
            _evaluate(autoscaler, timeline, started, out)
        time.sleep(max(0.0, sample_s - (time.time() - started - sample["t"])))
    _sample(job, timeline, started, out)  # the state that ended the run (drained) closes the timeline
    return True


def _sample(job: LocalJob, timeline: Timeline, started: float, out: TextIO) -> dict[str, Any]:
    sample = {"t": round(time.time() - started, 2), **job.sample()}
    timeline.samples.append(sample)
    print(_progress_line(sample), file=out, flush=True)
    return sample


def _evaluate(autoscaler: JobAutoscaler, timeline: Timeline, started: float, out: TextIO) -> None:
    d: Decision = autoscaler.scale()
    t = round(d.timestamp - started, 2)
    before, after = parallelism_value(d.current), parallelism_value(d.targets)
    timeline.decisions.append({"t": t, "action": d.action, "guard": d.guard, "from": before, "to": after,
                               "reason": d.reason, "advisory": d.advisory})
    if decision_realized(d):
        timeline.rescales.append({"t": t, "from": before, "to": after, "reason": d.reason})
    if d.action != "none" or d.guard:
        print(f"  decision at {t:.0f}s: {d.reason}", file=out, flush=True)


def parallelism_value(p: dict[str, int] | None) -> int | dict[str, int] | None:
    """One number for a job with one stage (Spark's executors), the map for several (Storm's components)."""
    if not p:
        return None
    return next(iter(p.values())) if len(p) == 1 else dict(p)


def _progress_line(s: dict[str, Any]) -> str:
    def rate(x):
        return fmt_rate(x) if x is not None else "-"

    # Spark measures a p99; Storm only a mean complete latency
    kind, latency = ("p99", s["latency_p99_s"]) if s.get("latency_p99_s") is not None else ("mean", s.get("latency_p50_s"))
    shown = f"{latency:.2f}s" if latency is not None else "-"
    backlog = fmt_count(s["backlog"]) if s["backlog"] is not None else "-"
    return (f"{s['t']:7.0f}s  in {rate(s['input_rate']):>8}  done {rate(s['processing_rate']):>8}  {kind:>4} {shown:>7}  "
            f"backlog {backlog:>6}  {_layout(s['parallelism'], s['target'])}")


def _layout(current: dict[str, int] | None, target: dict[str, int] | None) -> str:
    """executors 2->3 (Spark) or spout 1  split 2->3  count 4 (Storm: each component, its target when it differs)."""
    names = list(current or target or {})
    if not names:
        return "executors -"
    parts = []
    for n in names:
        c, t = (current or {}).get(n), (target or {}).get(n)
        shown = "-" if c is None else str(c)
        parts.append(f"{n} {shown}->{t}" if t is not None and (len(names) == 1 or t != c) else f"{n} {shown}")
    return "  ".join(parts)
