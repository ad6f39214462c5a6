"""Per-component metrics of one Storm topology on /metrics, for Prometheus (Storm has no per-topology Prometheus
reporter, and the UI that serves JSON stats is not on Maven Central).

A poller reads Nimbus's TopologyInfo every second: per-executor cumulative counters (executed, emitted, acked) and
their averages (execute, complete latency). Each worker reports on its own 10-second phase, so a component total
sampled on a clock alternates between wrong values (notes/storm-cluster.md). Rates are therefore taken per executor
between the moments its counters changed (its reports), over a window of at least MIN_SPAN_S, then summed.
An executor that has not reported twice since it started (about 20 s after a submit or rebalance) has no rate yet,
and its component is left out until it has: a partial sum would look like a drop in load.

With the source's state directory (storm_apps.source), the spout's input rate is the offered rate and its backlog and
pending tuples are the source's own; without it, the spout's input rate is its emit rate and its backlog 0.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily
from prometheus_client.exposition import MetricsHandler

from storm_apps.nimbus import NimbusClient, NimbusRefused, NimbusUnavailable, layout
from storm_apps.source import read_source_state

log = logging.getLogger(__name__)
ALL_TIME = ":all-time"
MIN_SPAN_S = 15.0  # between two reports of one executor (reports come every 10 s)
WINDOW_S = 45.0  # keep reports this long
QUIET_S = 12.0
OFFERED_SPAN_S = 10.0  # an executor whose counters did not move for this long reported nothing new: rate 0


@dataclass
class Report:
    """One executor's cumulative counters as of one of its reports (t: when the poller first saw them)."""

    t: float
    executed: float = 0.0
    emitted: float = 0.0
    acked: float = 0.0
    execute_ms: float = 0.0  # executed x average execute latency: total busy milliseconds
    complete_ms: float = 0.0  # acked x average complete latency (spouts)

    def same_counts(self, other: "Report") -> bool:
        return (self.executed, self.emitted, self.acked) == (other.executed, other.emitted, other.acked)


@dataclass
class ExecutorRates:
    executed: float
    emitted: float
    acked: float
    busy: float
    execute_latency_s: float | None
    complete_latency_s: float | None


def _user_streams(by_stream: dict, key=lambda s: s) -> float:
    return float(sum(v for s, v in (by_stream or {}).items() if not str(key(s)).startswith("__")))


def report_of(summary, now: float) -> Report:
    """The cumulative counters of one ExecutorSummary (user streams only: no acks, ticks or metrics)."""
    stats = summary.stats
    r = Report(now)
    if stats is None:
        return r
    r.emitted = _user_streams((stats.emitted or {}).get(ALL_TIME))
    specific = stats.specific
    if specific is not None and specific.bolt is not None:
        executed = (specific.bolt.executed or {}).get(ALL_TIME) or {}
        latency = (specific.bolt.execute_ms_avg or {}).get(ALL_TIME) or {}
        user = {s: n for s, n in executed.items() if not s.componentId.startswith("__")}
        r.executed = float(sum(user.values()))
        r.execute_ms = float(sum(n * (latency.get(s) or 0.0) for s, n in user.items()))
    elif specific is not None and specific.spout is not None:
        acked = (specific.spout.acked or {}).get(ALL_TIME) or {}
        latency = (specific.spout.complete_ms_avg or {}).get(ALL_TIME) or {}
        r.acked = _user_streams(acked)
        r.complete_ms = float(sum(n * (latency.get(s) or 0.0) for s, n in acked.items() if not s.startswith("__")))
    return r


def rates(reports: deque, now: float) -> ExecutorRates | None:
    """Rates between the newest report and the oldest one at least MIN_SPAN_S before it; None until there is one."""
    newest = reports[-1]
    if now - newest.t > QUIET_S:  # no report since: nothing moved
        newest = Report(now, newest.executed, newest.emitted, newest.acked, newest.execute_ms, newest.complete_ms)
    base = next((r for r in reversed(reports) if newest.t - r.t >= MIN_SPAN_S), None)
    if base is None:
        return None
    dt = newest.t - base.t
    d_exec, d_ack = newest.executed - base.executed, newest.acked - base.acked
    if d_exec < 0 or d_ack < 0 or newest.emitted < base.emitted:  # counters reset: a restarted executor
        return None
    d_exec_ms, d_complete_ms = newest.execute_ms - base.execute_ms, newest.complete_ms - base.complete_ms
    return ExecutorRates(
        executed=d_exec / dt, emitted=(newest.emitted - base.emitted) / dt, acked=d_ack / dt,
        busy=min(1.0, max(0.0, d_exec_ms / (dt * 1000.0))),
        execute_latency_s=d_exec_ms / d_exec / 1000.0 if d_exec > 0 else None,
        complete_latency_s=d_complete_ms / d_ack / 1000.0 if d_ack > 0 else None)


@dataclass
class Snapshot:
    """What the poller last saw: layout, per-executor rates, graph, source state."""

    taken_at: float = 0.0
    executors: dict[str, int] = field(default_factory=dict)
    tasks: dict[str, int] = field(default_factory=dict)
    workers: int = 0
    graph: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    rates: dict[str, list[ExecutorRates | None]] = field(default_factory=dict)
    source: dict | None = None
    offered_rate: float | None = None
    errors: dict[str, str] = field(default_factory=dict)


class StormExporter:
    """A prometheus_client collector for one topology; poll() (or start()) keeps it current."""

    def __init__(self, nimbus: NimbusClient, topology: str, app: str, state_dir: Path | str | None = None):
        self.nimbus, self.topology, self.app = nimbus, topology, app
        self.state_dir = Path(state_dir) if state_dir else None
        self.reports: dict[tuple, deque[Report]] = {}
        self.offered: deque[tuple[float, int]] = deque()
        self.snapshot = Snapshot()
        self.topology_id: str | None = None
        self.graph: dict[str, tuple[str, tuple[str, ...]]] = {}
        self.graph_of: str | None = None  # the topology id the graph was read for
        self.up = False
        self._stop = threading.Event()
        self._lock = threading.Lock()

    # --- polling ---
    def poll(self) -> None:
        now = time.monotonic()
        info = self._info()
        state = layout(info)
        if self.graph_of != info.id:  # the wiring is fixed at submit: read once per submitted topology
            self.graph, self.graph_of = self.nimbus.graph_by_id(info.id), info.id
        seen, per_component = set(), {}
        for e in info.executors or []:
            if e.component_id is None or e.component_id.startswith("__"):
                continue
            key = (e.component_id, e.executor_info.task_start, e.host, e.port)
            seen.add(key)
            report = report_of(e, now)
            history = self.reports.setdefault(key, deque())
            if not history or not report.same_counts(history[-1]):
                history.append(report)
            while history and now - history[0].t > WINDOW_S and len(history) > 2:
                history.popleft()
            per_component.setdefault(e.component_id, []).append(rates(history, now) if history else None)
        for gone in set(self.reports) - seen:
            del self.reports[gone]
        source = read_source_state(self.state_dir) if self.state_dir else None
        with self._lock:
            self.snapshot = Snapshot(time.time(), state.executors(), {c.name: c.tasks for c in state.components},
                                     state.workers, self.graph, per_component, source, self._offered_rate(source, now),
                                     state.errors)

    def _info(self):
        """The topology's TopologyInfo: one call by its known id; the id is looked up (getClusterInfo) only at the
        start and after the topology went away (killed, resubmitted)."""
        if self.topology_id is not None:
            try:
                return self.nimbus.info_by_id(self.topology_id)
            except NimbusRefused:
                self.topology_id = None
        self.topology_id = self.nimbus.topology_id(self.topology)
        if self.topology_id is None:
            raise LookupError(f"no topology named {self.topology} on Nimbus")
        return self.nimbus.info_by_id(self.topology_id)

    def _offered_rate(self, source: dict | None, now: float) -> float | None:
        if not source:
            return None
        self.offered.append((now, source["offered"]))
        while len(self.offered) > 2 and now - self.offered[0][0] > WINDOW_S:
            self.offered.popleft()
        # the source writes its state twice a second: a short span is exact and follows a step quickly
        base = next(((t, n) for t, n in reversed(self.offered) if now - t >= OFFERED_SPAN_S), None)
        return (source["offered"] - base[1]) / (now - base[0]) if base else None

    def start(self, interval_s: float = 1.0) -> "StormExporter":
        def loop():
            while not self._stop.is_set():
                try:
                    self.poll()
                    self.up = True
                except (NimbusUnavailable, LookupError) as err:
                    self.up = False
                    log.info("storm exporter: %s", err)
                self._stop.wait(interval_s)

        threading.Thread(target=loop, name=f"storm-exporter-{self.topology}", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()

    # --- exposition ---
    def collect(self):
        with self._lock:
            snap = self.snapshot
        labels = ["app", "component"]
        g = {name: GaugeMetricFamily(f"{SERIES_PREFIX}{name}", doc, labels=labels)
             for name, doc in COMPONENT_SERIES.items()}
        info = InfoMetricFamily("elastream_storm_component", "a component: kind and upstream components",
                                labels=labels)
        for comp, n in snap.executors.items():
            kind, upstream = snap.graph.get(comp, ("bolt", ()))
            lv = [self.app, comp]
            info.add_metric(lv, {"kind": kind, "upstream": ",".join(upstream)})
            g["executors"].add_metric(lv, n)
            g["tasks"].add_metric(lv, snap.tasks.get(comp, n))
            for name, value in component_values(kind, snap.rates.get(comp, []), snap.source,
                                                snap.offered_rate).items():
                if value is not None:
                    g[name].add_metric(lv, value)
        workers = GaugeMetricFamily("elastream_storm_workers", "worker processes of the topology", labels=["app"])
        workers.add_metric([self.app], snap.workers)
        up = GaugeMetricFamily("elastream_storm_up", "1 when the last poll of Nimbus succeeded", labels=["app"])
        up.add_metric([self.app], 1.0 if self.up else 0.0)
        yield from [*g.values(), info, workers, up]


SERIES_PREFIX = "elastream_storm_"
# per component (labels app, component): the series' names after SERIES_PREFIX, and their help
COMPONENT_SERIES = {
    "executors": "executors of the component",
    "tasks": "tasks of the component (the most executors it can have)",
    "input_rate": "tuples/s arriving (spout: offered by the source)",
    "processing_rate": "tuples/s executed (spout: emitted)",
    "emit_rate": "tuples/s emitted on user streams",
    "ack_rate": "records/s fully processed: acked tuple trees (spouts)",
    "busy_fraction": "mean share of time its executors spent executing (Storm's capacity)",
    "busy_fraction_max": "share of time its busiest executor spent executing: a hot key shows here",
    "execute_latency_seconds": "mean execute latency",
    "complete_latency_seconds": "mean time from emit to full ack (spouts)",
    "backlog_records": "records offered by the source and not yet emitted (spouts)",
    "pending_tuples": "tuples emitted and not yet acked (spouts)",
}


def component_values(kind: str, executor_rates: list[ExecutorRates | None], source: dict | None,
                     offered_rate: float | None) -> dict[str, float | None]:
    """The component's series from its executors' rates; rates are None while any executor has none yet."""
    out: dict[str, float | None] = {}
    if executor_rates and all(r is not None for r in executor_rates):
        rs = [r for r in executor_rates if r is not None]
        executed, emitted = sum(r.executed for r in rs), sum(r.emitted for r in rs)
        out["emit_rate"] = emitted
        lat = [r.execute_latency_s for r in rs if r.execute_latency_s is not None]
        out["execute_latency_seconds"] = sum(lat) / len(lat) if lat else None
        if kind == "spout":
            out["processing_rate"] = emitted
            out["ack_rate"] = sum(r.acked for r in rs)
            out["input_rate"] = offered_rate if offered_rate is not None else emitted
            # a spout's work is the source's; its backlog says when it falls behind
            out["busy_fraction"] = out["busy_fraction_max"] = 0.0
            done = [r.complete_latency_s for r in rs if r.complete_latency_s is not None]
            out["complete_latency_seconds"] = max(done) if done else None
        else:
            out["processing_rate"] = out["input_rate"] = executed
            out["busy_fraction"] = sum(r.busy for r in rs) / len(rs)
            # the mean hides skew: one executor saturated by a hot key (fields grouping) beside idle ones
            out["busy_fraction_max"] = max(r.busy for r in rs)
    if kind == "spout":
        out["backlog_records"] = float(source["backlog"]) if source else 0.0
        out["pending_tuples"] = float(source["pending"]) if source else None
    return out


def serve(exporter: StormExporter, port: int, host: str = "127.0.0.1"):
    """Poll in the background and serve /metrics on host:port; returns (server, thread): server.shutdown() stops
    both."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(exporter)
    exporter.start()
    server = ThreadingHTTPServer((host, port), MetricsHandler.factory(registry))
    server.daemon_threads = True
    original = server.shutdown

    def shutdown():
        exporter.stop()
        original()
        server.server_close()

    server.shutdown = shutdown
    thread = threading.Thread(target=server.serve_forever, name="storm-exporter-http", daemon=True)
    thread.start()
    return server, thread
