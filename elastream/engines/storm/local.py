"""A Storm app run on this machine: ZooKeeper, Nimbus and two supervisors from Storm's Maven Central jars
(storm_apps.cluster), the built-in topology submitted with tasks = max parallelism, the Storm exporter serving
/metrics, and rebalances through Nimbus Thrift — as the operator does in attach mode.

stop() kills the topology, the exporter and every daemon — also after Ctrl-C or an error.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from elastream.api.manifests import ManifestError
from elastream.api.streamapp import StreamAppSpec
from elastream.engines.base import MetricsUnavailable
from elastream.engines.storm.observation import ScrapeStormSource
from elastream.engines.storm.realizer import RebalanceRealizer, workers_for
from elastream.local.manifest import LocalApp

SUPERVISORS = 2


def check_runnable(app: LocalApp) -> None:
    if app.spec.storm.attach is not None:
        raise ManifestError(app.name, ["spec.storm.attach: the local mode starts its own Storm cluster; remove attach"])
    trace = app.spec.storm.source.generator.trace
    if app.spec.storm.source.generator.profile == "trace" and not (trace and Path(trace).is_file()):
        raise ManifestError(app.name, [f"spec.storm.source.generator.trace: {trace!r} is not a readable file "
                                       "(a CSV with header time,rate)"])


def layout(name: str, spec: StreamAppSpec) -> tuple[dict[str, int], dict[str, int]]:
    """Initial executors and max executors (= tasks) per component: the spec's, else the built-in topology's
    (local and managed mode). ManifestError names a component the topology does not have."""
    from storm_apps.topology import APPS

    storm = spec.storm
    topology = APPS[storm.application.builtin]
    names = [c[0] for c in topology.components]
    unknown = sorted((set(storm.parallelism) | set(storm.max_parallelism)) - set(names))
    if unknown:
        raise ManifestError(name, [f"spec.storm.maxParallelism: {', '.join(unknown)} is not a component of "
                                   f"{storm.application.builtin} ({', '.join(names)})"])
    maxp = {n: storm.max_parallelism.get(n, topology.default_max_parallelism.get(n, 1)) for n in names}
    initial = {n: min(storm.parallelism.get(n, 1), maxp[n]) for n in names}
    return initial, maxp


class StormLocalJob:
    def __init__(self, app: LocalApp, workdir: Path, duration_s: float, cluster=None):
        """cluster: a running LocalStormCluster to submit to (left running at stop()); None: start our own."""
        self.app, self.workdir, self.duration_s = app, Path(workdir), duration_s
        self.shared_cluster = cluster
        self.spec = app.spec.storm
        self.topology = self.spec.topology_name(app.name)
        self.initial, self.max_parallelism = layout(app.name, app.spec)
        self.cluster = self.nimbus = self.exporter = self.server = None
        self.exporter_port = 0
        self.submitted_at: float | None = None
        self.realized: RebalanceRealizer | None = None

    @property
    def state_dir(self) -> Path:
        return self.workdir / "state"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.exporter_port}/metrics"

    def start(self, ready_timeout_s: float = 240.0) -> "StormLocalJob":
        from spark_apps.cluster import free_port
        from storm_apps.cluster import LocalStormCluster
        from storm_apps.exporter import StormExporter, serve
        from storm_apps.nimbus import NimbusClient
        from storm_apps.topology import submit

        self.workdir.mkdir(parents=True, exist_ok=True)
        w = self.spec.workers
        slots = max(2, -(-w.max // SUPERVISORS))
        try:
            self.cluster = self.shared_cluster or LocalStormCluster(
                supervisors=SUPERVISORS, slots_per_supervisor=slots, base_dir=self.workdir / "storm").start()
            self.nimbus = NimbusClient(self.cluster.nimbus_host, self.cluster.nimbus_port)
            submit(self.cluster.storm_home, self.cluster.nimbus_host, self.cluster.nimbus_port,
                   name=self.topology, app=self.spec.application.builtin, parallelism=self.initial,
                   max_parallelism=self.max_parallelism,
                   workers=workers_for(self.initial, self.spec.executors_per_worker, w.min, w.max),
                   generator=self._generator(), state_dir=self.state_dir,
                   duration_s=self.duration_s)
            self.submitted_at = time.time()
            self.exporter = StormExporter(self.nimbus, self.topology, self.app.name, self.state_dir)
            self.exporter_port = free_port()
            self.server = serve(self.exporter, self.exporter_port)
            self._wait_ready(ready_timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def _generator(self) -> dict:
        """The spout's load profile (and hot word); a trace path is made absolute (the spout runs in a worker's
        directory)."""
        generator = self.spec.source.generator.model_dump()
        if generator.get("trace"):
            generator["trace"] = str(Path(generator["trace"]).resolve())
        return self.spec.application.generator_args(generator)

    def _wait_ready(self, timeout_s: float) -> None:
        """Until every component has reported once (the first stats come ~20 s after a submit)."""
        deadline, last = time.monotonic() + timeout_s, "nothing yet"
        while time.monotonic() < deadline:
            try:
                self.metrics().observe(self.app.name)
                return
            except MetricsUnavailable as err:
                last = str(err)
            time.sleep(2.0)
        raise TimeoutError(f"the topology reported no complete metrics after {timeout_s:.0f}s ({last}); "
                           f"see {self.cluster.log_dir}")

    def describe(self) -> str:
        return (f"storm cluster: nimbus {self.cluster.nimbus_host}:{self.cluster.nimbus_port}, "
                f"{SUPERVISORS} supervisors; topology {self.topology}; metrics {self.metrics_url}")

    def metrics(self) -> ScrapeStormSource:
        return ScrapeStormSource(self.metrics_url, self.app.name, self.max_parallelism)

    def realizer(self) -> RebalanceRealizer:
        if self.realized is None:
            w = self.spec.workers
            self.realized = RebalanceRealizer(self.nimbus, self.topology, self.spec.executors_per_worker,
                                              (w.min, w.max), stall_probe=self._stall_probe)
        return self.realized

    def _stall_probe(self):
        """Before a rebalance: the records emitted so far. The wait returns the seconds from the call until all of
        them are acked (the source's committed offset passes them), replays of lost tuples included."""
        from storm_apps.source import read_source_state

        emitted = (read_source_state(self.state_dir) or {}).get("next_seq", 0)

        def wait(t0: float, timeout_s: float = 180.0) -> float | None:
            while time.monotonic() < t0 + timeout_s and self.cluster is not None:
                if (read_source_state(self.state_dir) or {}).get("committed", 0) >= emitted:
                    return time.monotonic() - t0
                time.sleep(0.25)
            return None

        return wait

    def sample(self) -> dict[str, Any]:
        try:
            values, info = self.metrics().read()
        except MetricsUnavailable:
            values, info = {}, {}
        spouts = [n for n, (kind, _) in info.items() if kind == "spout"]

        def total(key, names):
            got = [values.get(key, {}).get(n) for n in names]
            got = [g for g in got if g is not None]
            return sum(got) if got else None

        current = {n: int(v) for n, v in values.get("executors", {}).items()} or None
        target = self.realized.history[-1].executors if self.realized and self.realized.history else None
        return {"input_rate": total("inputRate", spouts), "processing_rate": total("ackRate", spouts),
                "latency_p99_s": None, "latency_p50_s": total("completeLatency", spouts),
                "backlog": total("backlog", spouts),
                "busy": max(values.get("busyFraction", {}).values(), default=None),
                "parallelism": current, "target": {**(current or {}), **(target or {})} if current else None}

    def verify(self, stopped_at: float) -> dict[str, Any]:
        from storm_apps import verify
        from storm_apps.source import read_source_state

        check = verify.check(self.state_dir)
        # a run stopped before it drained: records past the committed offset were still queued or in flight, not
        # lost; every record below it was acked, so must be whole at the sink
        committed = (read_source_state(self.state_dir) or {}).get("committed", check.produced)
        acked = verify.check(self.state_dir, upto=committed) if committed < check.produced else check
        stalls = [{"executors": r.executors, "workers": r.workers, "layout_s": r.layout_s, "stall_s": r.stall_s}
                  for r in (self.realized.history if self.realized else [])]
        return {"records_produced": check.produced, "records_processed": check.processed,
                "missing": acked.missing, "unfinished": check.missing - acked.missing, "duplicates": check.duplicates,
                # verified: the whole run checked (an undrained run is not, and `elastream run` exits 1)
                "at_least_once": acked.missing == 0, "verified": check.missing == 0 and check.produced > 0,
                "rebalances": stalls}

    def finished(self) -> bool:
        """The load has ended and the sink has everything the source emitted (nothing left to drain)."""
        from storm_apps.source import read_source_state

        if self.submitted_at is None or time.time() < self.submitted_at + self.duration_s:
            return False
        state = read_source_state(self.state_dir)
        # the profile's clock starts when the spout does (10-20 s after the submit): wait for its whole load
        return bool(state) and state["pending"] == 0 and state["acked"] >= (state.get("total") or state["offered"])

    def stop(self) -> None:
        """Kill the topology, the exporter and the cluster. Safe to call twice."""
        if self.server is not None:
            server, _thread = self.server
            server.shutdown()
            self.server = None
        if self.nimbus is not None and self.cluster is not None:
            try:
                self.nimbus.kill(self.topology, wait_s=0)
            except Exception:  # noqa: BLE001 - the cluster goes down next anyway
                pass
        if self.cluster is not None and self.cluster is not self.shared_cluster:
            self.cluster.stop()
        self.cluster = None
