"""Pure parts of `elastream bench rescale`: log lines and their CRI timestamps, pod watch events, the phases of one
rescale measured from the decision, statistics over repeats, and the tables. No Kubernetes client, no I/O.

Times: a watch event carries the local wall and monotonic clocks at which the bench received it; watch phases are
monotonic differences from t0 (the instant the bench wrote spec.replicas). Log marks carry the container runtime's
RFC3339Nano timestamp (the host clock of the node) and are wall differences from t0 — on the test cluster the
nodes share this machine's clock.
"""
from __future__ import annotations

import calendar
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

REGISTERED = "Successfully registered with driver"
FIRST_TASK = "Got assigned task"
GOAL_S = 20.0  # the team's goal: a new executor processes its first task within 20 s of the decision

# (key, row label) in timeline order
SCALE_OUT = [
    ("realized", "operator realized it (the driver logs the new target)"),
    ("created", "executor pod created (watch ADDED)"),
    ("scheduled", "pod scheduled (spec.nodeName set)"),
    ("started", "container running"),
    ("registered", "executor registered with the driver (log)"),
    ("first_task", "executor got its first task (log)"),
]
SCALE_IN = [
    ("realized", "operator realized it (the driver logs the new target)"),
    ("counted", "driver reports the new count"),
    ("exiting", "executor exiting (container terminated or pod deleting)"),
    ("deleted", "executor pod deleted (watch DELETED)"),
]

_RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$")


def parse_rfc3339(text: str) -> float:
    """Seconds since the epoch of an RFC3339 timestamp with up to nanoseconds ("2026-11-23T00:35:35.333385131Z");
    ValueError if it is not one."""
    m = _RFC3339.match(text.strip())
    if not m:
        raise ValueError(f"not an RFC3339 timestamp: {text!r}")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    whole = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    frac = int(m.group(7)) / 10 ** len(m.group(7)) if m.group(7) else 0.0
    zone = m.group(8)
    offset = 0 if zone in ("Z", "z") else (1 if zone[0] == "+" else -1) * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    return whole - offset + frac


def split_log_line(line: str) -> tuple[float, str] | None:
    """(timestamp, text) of a line read with timestamps=True ("<RFC3339Nano> <text>"), or None if it has no
    timestamp (a wrapped or empty line)."""
    stamp, _, text = line.partition(" ")
    try:
        return parse_rfc3339(stamp), text
    except ValueError:
        return None


def first_mark(log: str, needle: str, not_before: float | None = None) -> float | None:
    """Timestamp of the first line containing `needle` (at or after `not_before`), or None."""
    for line in log.splitlines():
        parsed = split_log_line(line)
        if parsed and needle in parsed[1] and (not_before is None or parsed[0] >= not_before):
            return parsed[0]
    return None


def executor_marks(log: str) -> dict[str, float | None]:
    """When an executor registered with the driver and when it got its first task (epoch seconds, or None)."""
    return {"registered": first_mark(log, REGISTERED), "first_task": first_mark(log, FIRST_TASK)}


def realized_mark(driver_log: str, target: int, not_before: float) -> float | None:
    """When the driver was asked for `target` executors: the runner logs "executors: target N (live M)"
    (spark_apps.executors) as the control endpoint's PUT is served."""
    return first_mark(driver_log, f"executors: target {target} ", not_before)


@dataclass(frozen=True)
class PodEvent:
    """One watch event of an executor pod, with the local clocks at which it arrived."""

    kind: str  # ADDED | MODIFIED | DELETED | LISTED (the state a list returned before the watch)
    pod: str
    wall: float
    mono: float
    node: str | None = None
    phase: str | None = None
    running: bool = False  # a container is in state running
    terminated: bool = False  # a container is in state terminated
    deleting: bool = False  # metadata.deletionTimestamp is set
    container: str | None = None  # the first container's name (to read its log)


def event_from_pod(kind: str, pod: dict[str, Any], wall: float, mono: float) -> PodEvent:
    """A PodEvent from a watch event's raw object (the API's JSON: camelCase keys)."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    states = [(s.get("state") or {}) for s in status.get("containerStatuses") or []]
    containers = spec.get("containers") or []
    return PodEvent(kind=kind, pod=meta.get("name", ""), wall=wall, mono=mono, node=spec.get("nodeName") or None,
                    phase=status.get("phase"), running=any("running" in s for s in states),
                    terminated=any("terminated" in s for s in states),
                    deleting=bool(meta.get("deletionTimestamp")),
                    container=containers[0].get("name") if containers else None)


def pods_at(listed: Iterable[str], events: Iterable[PodEvent], mono: float) -> set[str]:
    """The pods that existed at monotonic time `mono`: listed ones plus added, minus deleted, before it."""
    alive = set(listed)
    for e in events:
        if e.mono >= mono:
            continue
        if e.kind == "DELETED":
            alive.discard(e.pod)
        else:
            alive.add(e.pod)
    return alive


def new_pods(events: Iterable[PodEvent], existing: set[str], since_mono: float) -> list[str]:
    """Pods that first appeared at or after `since_mono` and were not in `existing`, in order of appearance."""
    seen: list[str] = []
    for e in events:
        if e.mono >= since_mono and e.pod not in existing and e.pod not in seen and e.kind != "DELETED":
            seen.append(e.pod)
    return seen


def deleted_pods(events: Iterable[PodEvent], existing: set[str], since_mono: float) -> list[str]:
    """Pods of `existing` deleted at or after `since_mono`, in order of deletion."""
    return [e.pod for e in events if e.kind == "DELETED" and e.mono >= since_mono and e.pod in existing]


def _first(events: Iterable[PodEvent], pod: str, since_mono: float, test) -> float | None:
    for e in events:
        if e.pod == pod and e.mono >= since_mono and test(e):
            return e.mono
    return None


def _after(t: float | None, t0: float) -> float | None:
    return None if t is None else round(t - t0, 3)


def scale_out_timeline(events: list[PodEvent], pod: str | None, t0_wall: float, t0_mono: float,
                       marks: dict[str, float | None], realized: float | None) -> dict[str, float | None]:
    """Seconds from the decision to each scale-out phase of the new executor `pod` (None: not seen).
    `marks` are its log marks (epoch), `realized` the driver's log mark (epoch)."""
    return {
        "realized": _after(realized, t0_wall),
        "created": _after(_first(events, pod, t0_mono, lambda e: True), t0_mono),
        "scheduled": _after(_first(events, pod, t0_mono, lambda e: e.node is not None), t0_mono),
        "started": _after(_first(events, pod, t0_mono, lambda e: e.running), t0_mono),
        "registered": _after(marks.get("registered"), t0_wall),
        "first_task": _after(marks.get("first_task"), t0_wall),
    }


def scale_in_timeline(events: list[PodEvent], pod: str | None, t0_wall: float, t0_mono: float,
                      realized: float | None, counted_mono: float | None) -> dict[str, float | None]:
    """Seconds from the decision to each scale-in phase of the removed executor `pod` (None: not seen).
    `counted_mono` is when the driver first reported the new count (monotonic)."""
    exiting = deleted = None
    if pod is not None:
        exiting = _first(events, pod, t0_mono, lambda e: e.terminated or e.deleting or e.kind == "DELETED"
                         or e.phase in ("Succeeded", "Failed"))
        deleted = _first(events, pod, t0_mono, lambda e: e.kind == "DELETED")
    return {"realized": _after(realized, t0_wall), "counted": _after(counted_mono, t0_mono),
            "exiting": _after(exiting, t0_mono), "deleted": _after(deleted, t0_mono)}


def parse_p99(metrics_text: str, app: str) -> float | None:
    """The job's end-to-end p99 (the runner exports one series per query; the largest), or None if absent."""
    return parse_gauge(metrics_text, app, "elastream_latency_p99_seconds")


def parse_rate(metrics_text: str, app: str) -> float | None:
    """Records/s offered to the job (elastream_input_rate), or None if absent."""
    return parse_gauge(metrics_text, app, "elastream_input_rate")


def parse_gauge(metrics_text: str, app: str, metric: str) -> float | None:
    """The largest value of `metric{app="<app>",...}` in a Prometheus text exposition, or None if absent."""
    pattern = re.compile(r"^" + re.escape(metric) + r"\{([^}]*)\}\s+(\S+)")
    best: float | None = None
    for line in metrics_text.splitlines():
        m = pattern.match(line)
        if not m or f'app="{app}"' not in m.group(1):
            continue
        try:
            value = float(m.group(2))
        except ValueError:
            continue
        if value == value and (best is None or value > best):  # NaN is no sample
            best = value
    return best


def p99_around(samples: Iterable[tuple[float, float | None]], t0: float, before: float, after: float
               ) -> tuple[float | None, float | None]:
    """Max p99 in [t0 - before, t0) and in [t0, t0 + after] over (wall time, value) samples; None: no sample."""
    pre = [v for t, v in samples if v is not None and t0 - before <= t < t0]
    post = [v for t, v in samples if v is not None and t0 <= t <= t0 + after]
    return (max(pre) if pre else None), (max(post) if post else None)


def last_before(samples: Iterable[tuple[float, float | None]], t: float, within: float = 5.0) -> float | None:
    """The last value sampled at or before `t`, if no older than `within` seconds; else None."""
    best = None
    for at, v in samples:
        if v is not None and t - within <= at <= t:
            best = v
    return best


def foreign_rescales(history: list[dict[str, Any]], t0_wall: float) -> list[tuple[float, str]]:
    """Realized rescales in status.history that the bench did not ask for (not manual overrides) at or after t0
    (history times have whole seconds): (time, words)."""
    out = []
    for h in history or []:
        if h.get("action") not in ("scaleUp", "scaleDown") or not h.get("realized") or h.get("algorithm") == "manual":
            continue
        try:
            at = parse_rfc3339(h.get("time", ""))
        except ValueError:
            continue
        if at >= int(t0_wall):
            out.append((at, f"{h.get('action')} at {h.get('time')}: {h.get('reason', '')}"))
    return out


def judge(history: list[dict[str, Any]], t0_wall: float, seconds: dict[str, float | None], replicas: Any,
          to: int) -> tuple[str | None, list[str]]:
    """(why the run is left out, or None; notes). A rescale by someone else before the run's last phase was seen
    spoils it; one after that only touches the p99 window after the decision, which a note says. spec.replicas no
    longer at the bench's value with no such rescale in the history spoils it too."""
    seen = [v for v in seconds.values() if v is not None]
    done = t0_wall + (max(seen) if seen else float("inf"))
    spoiled, notes = None, []
    foreign = foreign_rescales(history, t0_wall)
    for at, words in foreign:
        if at <= done and spoiled is None:
            spoiled = f"the autoscaler rescaled during the measurement ({words})"
        elif at > done:
            notes.append(f"the autoscaler rescaled {at - t0_wall:.0f} s after the decision, after this run's last "
                         f"phase: the p99 after it includes that ({words})")
    if spoiled is None and not foreign and replicas != to:
        spoiled = f"spec.replicas is {replicas}, not {to}: someone else rescaled during the measurement"
    return spoiled, notes


@dataclass
class Run:
    """One measured rescale."""

    direction: str  # out | in
    repeat: int
    from_n: int
    to_n: int
    t0: float  # wall clock when spec.replicas was written
    seconds: dict[str, float | None]
    pod: str | None = None
    p99_before: float | None = None
    p99_after: float | None = None
    rate: float | None = None  # records/s offered just before the decision
    disturbed: str | None = None  # why this run is left out of the statistics
    notes: list[str] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)  # the pod events around it, for --json


    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def relative_events(events: Iterable[PodEvent], t0_mono: float, since: float) -> list[dict[str, Any]]:
    """The pod events from `since` seconds before t0 on, with `t` in seconds after t0 (for the JSON record)."""
    out = []
    for e in events:
        if e.mono >= t0_mono - since:
            d = asdict(e)
            d["t"] = round(e.mono - t0_mono, 3)
            del d["mono"]
            out.append(d)
    return out


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) with linear interpolation between closest ranks (numpy's default)."""
    if not values:
        raise ValueError("percentile of no values")
    xs = sorted(values)
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summarize(runs: list[Run], keys: list[str]) -> dict[str, dict[str, Any]]:
    """Per phase over the undisturbed runs: median, p90, max, and every run's value (None where not seen)."""
    kept = [r for r in runs if not r.disturbed]
    out: dict[str, dict[str, Any]] = {}
    for key in keys:
        each = [r.seconds.get(key) for r in kept]
        seen = [v for v in each if v is not None]
        out[key] = {"median": percentile(seen, 0.5) if seen else None, "p90": percentile(seen, 0.9) if seen else None,
                    "max": max(seen) if seen else None, "runs": each, "n": len(seen)}
    return out


def _s(v: float | None, digits: int = 1) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def phase_table(runs: list[Run], phases: list[tuple[str, str]]) -> str:
    """Markdown: one row per phase, seconds from the decision: median, p90, max and each run."""
    stats = summarize(runs, [k for k, _ in phases])
    lines = ["| from the decision (spec.replicas written) to … | median (s) | p90 (s) | max (s) | each run (s) |",
             "|---|---:|---:|---:|---|"]
    for key, label in phases:
        st = stats[key]
        lines.append(f"| {label} | {_s(st['median'])} | {_s(st['p90'])} | {_s(st['max'])} | "
                     f"{', '.join(_s(v) for v in st['runs'])} |")
    return "\n".join(lines)


def p99_table(runs: list[Run], before: float, after: float) -> str:
    lines = [f"| run | rescale | pod | offered at t0 (records/s) | p99 max, {before:g} s before (s) | "
             f"p99 max, {after:g} s after (s) | note |",
             "|---:|---|---|---:|---:|---:|---|"]
    for r in runs:
        note = "; ".join(([f"left out: {r.disturbed}"] if r.disturbed else []) + r.notes)
        lines.append(f"| {r.repeat} | {r.direction} {r.from_n} → {r.to_n} | {r.pod or '–'} | {_s(r.rate, 0)} | "
                     f"{_s(r.p99_before, 2)} | {_s(r.p99_after, 2)} | {note} |")
    return "\n".join(lines)


def goal_line(runs: list[Run], goal: float = GOAL_S) -> str:
    outs = [r for r in runs if r.direction == "out" and not r.disturbed]
    firsts = [r.seconds.get("first_task") for r in outs]
    within = sum(1 for v in firsts if v is not None and v <= goal)
    seen = [v for v in firsts if v is not None]
    goal_text = f"Goal (a new executor processes its first task within {goal:g} s of the decision):"
    if not seen:
        return f"{goal_text} no scale-out measured."
    med = percentile(seen, 0.5)
    verdict = "met" if within == len(outs) else "not met"
    return (f"{goal_text} **{verdict}** — "
            f"{within} of {len(outs)} scale-outs within {goal:g} s, median {med:.1f} s, max {max(seen):.1f} s.")


def markdown(runs: list[Run], meta: dict[str, Any]) -> str:
    """The docs section: what was run, on what, how it was measured, and the tables."""
    before, after = meta.get("before", 30.0), meta.get("after", 60.0)
    outs = [r for r in runs if r.direction == "out"]
    ins = [r for r in runs if r.direction == "in"]
    text = [
        "## Rescaling executor pods on Kubernetes",
        "",
        f"Command: `{meta['command']}` — run {meta.get('date', '?')}, {meta.get('elapsed_s', 0):.0f} s in total. "
        f"{meta.get('environment', '')}".rstrip(),
        "",
        f"StreamApp `{meta['namespace']}/{meta['app']}` ({meta.get('app_summary', '')}); the bench writes "
        f"`spec.replicas` through the scale subresource (as `kubectl scale` does) — the decision, t0 — and the "
        f"running operator realizes the manual override at its next evaluation "
        f"(`evaluationInterval` {meta.get('evaluation_interval', '?')}). Each repeat scales out by one and back "
        "in; before each decision the bench waits the p99 window plus a random "
        f"0–{meta.get('jitter', 0):g} s, so that decisions meet the operator's loop at random points. "
        f"{meta.get('policy', '')} "
        "Pod phases are the times the bench's watch of the executor pods received them; registration and first task "
        "are the executor's log lines, stamped by the container runtime (same host clock); the operator's "
        "realization is the driver's log line `executors: target N`; for the autoscaler's own decisions it is part "
        "of the evaluation that makes them, so that row is then about 0 and the later ones shift by as much. "
        f"The new count on scale-in: {meta.get('count_source', '?')}. "
        f"p99 (`elastream_latency_p99_seconds`) and offered rate (`elastream_input_rate`): from "
        f"{meta.get('metrics_source', '?')}, sampled every second.",
        "",
        f"### Scale-out ({len(outs)} runs)",
        "",
        phase_table(outs, SCALE_OUT),
        "",
        f"### Scale-in ({len(ins)} runs)",
        "",
        phase_table(ins, SCALE_IN),
        "",
        "### The job's p99 latency around each rescale",
        "",
        p99_table(runs, before, after),
        "",
        goal_line(runs),
    ]
    if meta.get("conclusion"):
        text += ["", meta["conclusion"]]
    return "\n".join(text) + "\n"
