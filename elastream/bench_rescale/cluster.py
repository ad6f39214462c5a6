"""The cluster side of `elastream bench rescale`: find the StreamApp and its driver, write spec.replicas through the
scale subresource, watch the executor pods, read their logs, the driver's count and the job's p99.

Every wait has a deadline and ends with an error that says what was not seen; a missing StreamApp, driver pod or
Secret is a UserError (printed without a traceback by the CLI). The pure parts are in timeline.py.
"""
from __future__ import annotations

import base64
import contextlib
import json
import os
import platform
import random
import shlex
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

import requests

from elasticity import json_report
from elastream.engines.spark import managed
from elastream.api import GROUP, VERSION
from elastream.bench_rescale import timeline as tl
from elastream.errors import UserError

POLL_S = 0.25  # how often the driver's count and the pods' state are looked at while waiting
LOG_POLL_S = 1.0  # how often a new executor's log is read (the marks carry their own timestamps)
WATCH_WINDOW_S = 5  # server-side timeout of one watch request: the watcher can stop within this
CHECK_S = 2.0  # how often a wait checks that spec.replicas still says what the bench wrote


class Disturbed(Exception):
    """Someone else rescaled while a rescale was measured: the run is kept, left out of the statistics."""

    def __init__(self, message: str, pod: str | None):
        super().__init__(message)
        self.pod = pod


def _kubernetes():
    import kubernetes  # imported here: `elastream --help` and the unit tests need no client

    return kubernetes


@contextlib.contextmanager
def api_errors(what: str) -> Iterator[None]:
    """Turn an API or connection failure into a UserError that says what was being done."""
    k8s = _kubernetes()
    import urllib3

    try:
        yield
    except k8s.client.rest.ApiException as err:
        detail = err.reason
        try:
            detail = json.loads(err.body or "{}").get("message") or detail
        except (ValueError, AttributeError):
            pass
        raise UserError(f"{what}: the API server answered {err.status}: {detail}") from None
    except urllib3.exceptions.HTTPError as err:
        raise UserError(f"{what}: cannot reach the API server ({type(err).__name__}: {err})") from None


@dataclass
class Cluster:
    core: Any
    custom: Any


def connect() -> tuple[Cluster, str]:
    """Clients from $KUBECONFIG (or ~/.kube/config) and the current context's namespace."""
    k8s = _kubernetes()
    path = os.environ.get("KUBECONFIG")
    try:
        k8s.config.load_kube_config(config_file=path)
        _, active = k8s.config.list_kube_config_contexts(config_file=path)
    except (k8s.config.ConfigException, OSError, TypeError) as err:
        raise UserError(f"cannot load the kubeconfig ({path or '~/.kube/config'}): {err}") from None
    namespace = ((active or {}).get("context") or {}).get("namespace") or "default"
    client = k8s.client.ApiClient()
    return Cluster(k8s.client.CoreV1Api(client), k8s.client.CustomObjectsApi(client)), namespace


def _read(what: str, read: Callable[[], Any], missing: str) -> Any:
    """read(), with a 404 reported as `missing` and any other API failure as what was being done."""
    k8s = _kubernetes()
    with api_errors(what):
        try:
            return read()
        except k8s.client.rest.ApiException as err:
            if err.status == 404:
                raise UserError(missing) from None
            raise


def read_app(cluster: Cluster, namespace: str, name: str | None) -> dict[str, Any]:
    """The StreamApp (the only one in the namespace when no name is given)."""
    if name is None:
        with api_errors(f"reading StreamApps in {namespace}"):
            items = cluster.custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "streamapps")["items"]
        if len(items) != 1:
            found = ", ".join(i["metadata"]["name"] for i in items) or "none"
            raise UserError(f"--app is needed: StreamApps in namespace {namespace}: {found}")
        return items[0]
    return _read(f"reading StreamApp {namespace}/{name}",
                 lambda: cluster.custom.get_namespaced_custom_object(GROUP, VERSION, namespace, "streamapps", name),
                 f"StreamApp {namespace}/{name} not found (kubectl get streamapps -A)")


def check_app(app: dict[str, Any], base: int | None) -> tuple[int, int, int]:
    """(base, min, max) of a managed, running Spark StreamApp that can scale out by one from base."""
    meta, spec = app["metadata"], app.get("spec") or {}
    where = f"StreamApp {meta['namespace']}/{meta['name']}"
    spark = spec.get("spark") or {}
    if spec.get("engine", "spark") != "spark":
        raise UserError(f"{where} runs engine {spec.get('engine')!r}: only Spark executors are rescaled")
    if spark.get("attach"):
        raise UserError(f"{where} is attached (spec.spark.attach): its executors are not pods the operator's "
                        "managed mode creates; this bench needs a managed StreamApp")
    if spec.get("suspend"):
        raise UserError(f"{where} is suspended (spec.suspend: true)")
    ex = spark.get("executors") or {}
    lo, hi = int(ex.get("min", 1)), int(ex.get("max", 1))
    base = lo if base is None else base
    if not lo <= base < hi:
        raise UserError(f"{where}: cannot scale out by one from {base} within spec.spark.executors "
                        f"{lo}..{hi} (use --from N with {lo} <= N < {hi})")
    return base, lo, hi


def driver_pod(cluster: Cluster, namespace: str, app: str) -> dict[str, Any]:
    name = managed.names(app)["driver"]
    pod = _read(f"reading the driver pod {namespace}/{name}", lambda: cluster.core.read_namespaced_pod(name, namespace),
                f"driver pod {namespace}/{name} not found: is the operator running and the StreamApp {app} not "
                f"suspended? (kubectl get pods -A -l elastream.io/app={app})")
    pod = cluster.core.api_client.sanitize_for_serialization(pod)
    if (pod.get("status") or {}).get("phase") != "Running" or not pod["status"].get("podIP"):
        raise UserError(f"driver pod {namespace}/{name} is not running yet (phase "
                        f"{(pod.get('status') or {}).get('phase')}); wait for the StreamApp to be Running")
    return pod


def control_token(cluster: Cluster, namespace: str, app: str) -> str:
    name = managed.names(app)["secret"]
    secret = _read(f"reading Secret {namespace}/{name}", lambda: cluster.core.read_namespaced_secret(name, namespace),
                   f"Secret {namespace}/{name} (the driver's control token, created by the operator) not found")
    data = secret.data or {}
    if "token" not in data:
        raise UserError(f"Secret {namespace}/{name} has no key 'token'")
    return base64.b64decode(data["token"]).decode().strip()


class PodWatcher:
    """Lists the executor pods, then watches them in a thread, recording each event with the local clocks."""

    def __init__(self, cluster: Cluster, namespace: str, selector: str):
        self.cluster, self.namespace, self.selector = cluster, namespace, selector
        self.listed: set[str] = set()
        self._events: list[tl.PodEvent] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._rv: str | None = None
        self.problem: str | None = None
        self._thread = threading.Thread(target=self._run, name="pod-watch", daemon=True)

    def _list(self) -> None:
        pods = self.cluster.core.list_namespaced_pod(self.namespace, label_selector=self.selector,
                                                     _request_timeout=30)
        wall, mono = time.time(), time.monotonic()
        raw = self.cluster.core.api_client.sanitize_for_serialization(pods)
        with self._lock:
            if not self.listed and not self._events:
                self.listed = {p["metadata"]["name"] for p in raw.get("items") or []}
            for p in raw.get("items") or []:
                self._events.append(tl.event_from_pod("LISTED", p, wall, mono))
        self._rv = (raw.get("metadata") or {}).get("resourceVersion")

    def start(self) -> "PodWatcher":
        with api_errors(f"listing the executor pods ({self.selector}) in {self.namespace}"):
            self._list()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=WATCH_WINDOW_S + 10)

    def events(self) -> list[tl.PodEvent]:
        with self._lock:
            return list(self._events)

    def _run(self) -> None:
        k8s = _kubernetes()
        while not self._stop.is_set():
            w = k8s.watch.Watch()
            try:
                for ev in w.stream(self.cluster.core.list_namespaced_pod, self.namespace,
                                   label_selector=self.selector, resource_version=self._rv,
                                   timeout_seconds=WATCH_WINDOW_S, allow_watch_bookmarks=True,
                                   _request_timeout=WATCH_WINDOW_S + 10):
                    wall, mono = time.time(), time.monotonic()
                    kind, raw = ev["type"], ev["raw_object"]
                    if kind == "ERROR":
                        if raw.get("code") == 410:  # too old: list again (state events keep the timeline whole)
                            self._list()
                            break
                        raise RuntimeError(raw.get("message", "watch error"))
                    self._rv = (raw.get("metadata") or {}).get("resourceVersion") or self._rv
                    if kind != "BOOKMARK":
                        with self._lock:
                            self._events.append(tl.event_from_pod(kind, raw, wall, mono))
                    if self._stop.is_set():
                        w.stop()
                        break
                self.problem = None
            except Exception as err:  # noqa: BLE001 - a dropped watch is retried; the waits' deadlines still hold
                self.problem = f"{type(err).__name__}: {err}"
                self._stop.wait(1.0)
                with contextlib.suppress(Exception):
                    self._list()


class P99Sampler:
    """GETs the driver's /metrics every `period` seconds in a thread: (wall time, p99 or None)."""

    def __init__(self, url: str, app: str, period: float = 1.0):
        self.url, self.app, self.period = url, app, period
        self.samples: list[tuple[float, float | None]] = []  # p99
        self.rates: list[tuple[float, float | None]] = []  # offered records/s
        self.failures = 0
        self.last_problem: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="p99-sampler", daemon=True)
        self._http = requests.Session()

    def probe(self) -> str | None:
        """None if the endpoint answers with the gauge, else what is wrong."""
        try:
            resp = self._http.get(self.url, timeout=3)
            resp.raise_for_status()
        except requests.RequestException as err:
            return f"{self.url} unreachable: {type(err).__name__}"
        if tl.parse_p99(resp.text, self.app) is None:
            return f"{self.url} has no elastream_latency_p99_seconds{{app=\"{self.app}\"}} yet"
        return None

    def start(self) -> "P99Sampler":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            wall = time.time()
            value = rate = None
            try:
                resp = self._http.get(self.url, timeout=min(0.9, self.period))
                resp.raise_for_status()
                value, rate = tl.parse_p99(resp.text, self.app), tl.parse_rate(resp.text, self.app)
            except requests.RequestException as err:
                self.failures += 1
                self.last_problem = f"{type(err).__name__}"
            self.samples.append((wall, value))
            self.rates.append((wall, rate))
            next_at += self.period
            self._stop.wait(max(0.0, next_at - time.monotonic()))


class Counter:
    """The executor count the driver reports: its control endpoint (GET /executors: current and draining), or,
    when that cannot be reached from here, the StreamApp's status.currentExecutors (written by the operator at
    each evaluation: coarser)."""

    def __init__(self, url: str, token: str, read_status: Callable[[], dict[str, Any]]):
        self.url = url.rstrip("/") + "/executors"
        self._http = requests.Session()
        self._http.headers["Authorization"] = f"Bearer {token}"
        self.read_status = read_status
        self.direct = True

    def probe(self) -> str | None:
        try:
            resp = self._http.get(self.url, timeout=3)
        except requests.RequestException as err:
            return f"{self.url} unreachable: {type(err).__name__}"
        if resp.status_code != 200:
            return f"{self.url} answered {resp.status_code}: {resp.text[:200]}"
        return None

    def source(self) -> str:
        if self.direct:
            return ("the driver's control endpoint (`GET /executors`: registered executors, none draining), polled "
                    f"every {POLL_S:g} s")
        return "the StreamApp's `status.currentExecutors` (the control endpoint was unreachable from here)"

    def read(self) -> tuple[int, int] | None:
        """(current, draining), or None if it cannot be read just now."""
        if self.direct:
            try:
                doc = self._http.get(self.url, timeout=3).json()
                return int(doc["current"]), int(doc.get("draining", 0))
            except (requests.RequestException, ValueError, KeyError, TypeError):
                return None
        current = ((self.read_status() or {}).get("status") or {}).get("currentExecutors")
        return (int(current), 0) if current is not None else None


@dataclass
class Bench:
    cluster: Cluster
    namespace: str
    app: str
    base: int
    timeout: float
    before: float
    after: float
    counter: Counter
    sampler: P99Sampler | None
    say: Callable[[str], None] = print
    jitter: float = 0.0
    selector: str = ""
    driver: str = ""
    driver_container: str = "driver"
    runs: list[tl.Run] = field(default_factory=list)

    # --- reading -------------------------------------------------------------------------------------------
    def app_body(self) -> dict[str, Any]:
        return read_app(self.cluster, self.namespace, self.app)

    def write_replicas(self, n: int) -> None:
        with api_errors(f"writing spec.replicas={n} of StreamApp {self.namespace}/{self.app} (scale subresource)"):
            self.cluster.custom.patch_namespaced_custom_object_scale(
                GROUP, VERSION, self.namespace, "streamapps", self.app, {"spec": {"replicas": int(n)}})

    def pods(self) -> list[dict[str, Any]]:
        with api_errors("listing the executor pods"):
            pods = self.cluster.core.list_namespaced_pod(self.namespace, label_selector=self.selector,
                                                         _request_timeout=30)
        return self.cluster.core.api_client.sanitize_for_serialization(pods).get("items") or []

    def pod_log(self, pod: str, container: str | None, since: float | None = None) -> str | None:
        """The pod's log with CRI timestamps; None while its container has not started (or the pod is gone)."""
        k8s = _kubernetes()
        kwargs: dict[str, Any] = {"timestamps": True, "_request_timeout": 15}
        if container:
            kwargs["container"] = container
        if since is not None:
            kwargs["since_seconds"] = max(1, int(time.time() - since) + 2)
        try:
            return self.cluster.core.read_namespaced_pod_log(pod, self.namespace, **kwargs)
        except k8s.client.rest.ApiException as err:
            if err.status in (400, 404):  # waiting to start / gone
                return None
            raise

    def why(self) -> str:
        """What the StreamApp's status says, for an error message."""
        try:
            st = self.app_body().get("status") or {}
        except UserError as err:
            return str(err)
        ready = next((c for c in st.get("conditions") or [] if c.get("type") == "Ready"), {})
        last = st.get("lastDecision") or {}
        return (f"StreamApp {self.namespace}/{self.app}: phase {st.get('phase')}, Ready={ready.get('status')} "
                f"({ready.get('reason')}: {ready.get('message')}); last decision: {last.get('action')} "
                f"{last.get('reason', '')!r}. Is the operator running? It realizes spec.replicas at its next "
                "evaluation (kubectl get pods -A -l app.kubernetes.io/name=elastream).")

    # --- waiting -------------------------------------------------------------------------------------------
    def settled(self, n: int) -> str | None:
        """None when n executor pods run (none pending or going) and the driver counts n, none draining;
        else what is not yet so."""
        pods = self.pods()
        running = [p for p in pods if _running(p) and not p["metadata"].get("deletionTimestamp")]
        other = [p["metadata"]["name"] for p in pods if p not in running
                 and (p.get("status") or {}).get("phase") in ("Pending", "Running", None)]
        count = self.counter.read()
        if len(running) != n or other:
            return f"{len(running)} executor pods running, {len(other)} starting or going ({', '.join(other)})"
        if count is None:
            return "the driver's executor count cannot be read"
        if count != (n, 0):
            return f"the driver counts {count[0]} executors ({count[1]} draining)"
        return None

    def wait_settled(self, n: int) -> None:
        deadline = time.monotonic() + self.timeout
        state = self.settled(n)
        while state is not None:
            if time.monotonic() > deadline:
                raise UserError(f"the job did not settle at {n} executors within {self.timeout:g} s: {state}. "
                                + self.why())
            time.sleep(1.0)
            state = self.settled(n)

    def bring_to(self, n: int) -> None:
        """Unmeasured setup: make spec.replicas n and wait until the job runs n executors."""
        replicas = (self.app_body().get("spec") or {}).get("replicas")
        if replicas != n or self.settled(n) is not None:
            self.say(f"setup: spec.replicas {replicas} -> {n}, waiting until {n} executors run")
            self.write_replicas(n)
        self.wait_settled(n)

    # --- one measured rescale ------------------------------------------------------------------------------
    def measure(self, direction: str, frm: int, to: int, repeat: int) -> tl.Run:
        """One rescale from `frm` to `to` executors, measured from the instant spec.replicas is written."""
        watcher = self._ready_at(frm)
        notes: list[str] = []
        pod: str | None = None
        marks: dict[str, float | None] = {}
        counted: float | None = None
        spoiled: str | None = None
        try:
            t0_mono = time.monotonic()
            existing = tl.pods_at(watcher.listed, watcher.events(), t0_mono)
            t0_wall = time.time()
            self.write_replicas(to)
            self.say(f"  [{repeat}] {direction} {frm} -> {to}: spec.replicas written at "
                     f"{datetime.fromtimestamp(t0_wall, timezone.utc):%H:%M:%S.%f}"[:-3] + " UTC")
            deadline = t0_mono + self.timeout
            try:
                if direction == "out":
                    pod, marks = self._wait_first_task(watcher, existing, t0_mono, to, deadline, notes)
                else:
                    pod, counted = self._wait_removed(watcher, existing, t0_mono, to, deadline)
            except Disturbed as err:
                spoiled, pod = str(err), err.pod
            rest = t0_mono + self.after - time.monotonic()
            if rest > 0 and self.sampler is not None and spoiled is None:
                time.sleep(rest)  # the p99 window after the decision
        finally:
            watcher.stop()
        events = watcher.events()
        with api_errors("reading the driver's log"):
            driver_log = self.pod_log(self.driver, self.driver_container, since=t0_wall - 5) or ""
        realized = tl.realized_mark(driver_log, to, t0_wall - 1.0)
        if realized is None:
            notes.append("the driver's log has no `executors: target` line for this rescale")
        if direction == "out":
            seconds = tl.scale_out_timeline(events, pod, t0_wall, t0_mono, marks, realized)
        else:
            seconds = tl.scale_in_timeline(events, pod, t0_wall, t0_mono, realized, counted)
        body = self.app_body()
        judged, later = tl.judge((body.get("status") or {}).get("history") or [], t0_wall, seconds,
                                 (body.get("spec") or {}).get("replicas"), to)
        spoiled = spoiled or judged
        p99 = (tl.p99_around(list(self.sampler.samples), t0_wall, self.before, self.after)
               if self.sampler is not None else (None, None))
        rate = tl.last_before(list(self.sampler.rates), t0_wall) if self.sampler is not None else None
        run = tl.Run(direction, repeat, frm, to, t0_wall, seconds, pod, p99[0], p99[1], rate, spoiled,
                     notes + later, tl.relative_events(events, t0_mono, self.before))
        self.runs.append(run)
        shown = ", ".join(f"{k} {v:.1f}s" for k, v in seconds.items() if v is not None)
        self.say(f"      {pod}: {shown}" + (f"  [left out: {spoiled}]" if spoiled else ""))
        return run

    def _ready_at(self, n: int, attempts: int = 4) -> PodWatcher:
        """Settle at n executors, watch the pods through the window before the decision, and check that nobody
        rescaled meanwhile (the autoscaler may, on a changing load): then the watcher, still running."""
        for _ in range(attempts):
            self.bring_to(n)
            watcher = PodWatcher(self.cluster, self.namespace, self.selector).start()
            # the p99 window before the decision (the sampler runs meanwhile), plus a random part: the operator
            # looks at spec.replicas every few seconds, and decisions at a fixed rhythm would always meet its
            # loop at the same point (its share of the delay would not be sampled fairly)
            time.sleep(self.before + random.uniform(0.0, self.jitter))
            replicas = (self.app_body().get("spec") or {}).get("replicas")
            state = self.settled(n)
            if replicas == n and state is None:
                return watcher
            watcher.stop()
            self.say(f"      moved before the decision (spec.replicas {replicas}; {state or 'settled'}): again")
        raise UserError(f"the job would not stay at {n} executors for {self.before:g} s ({attempts} tries): someone "
                        "else keeps rescaling it — the autoscaler under a changing load? Set the policy's mode to "
                        "advisor while benchmarking (manual overrides still apply).")

    def _moved(self, to: int, pod: str | None) -> None:
        """Disturbed if spec.replicas no longer says `to`: someone else (the autoscaler) rescaled meanwhile."""
        replicas = (self.app_body().get("spec") or {}).get("replicas")
        if replicas != to:
            raise Disturbed(f"spec.replicas became {replicas} before the rescale to {to} was done: someone else "
                            "(the autoscaler?) rescaled", pod)

    def _wait_first_task(self, watcher: PodWatcher, existing: set[str], t0_mono: float, to: int,
                         deadline: float, notes: list[str]) -> tuple[str, dict[str, float | None]]:
        """The new executor pod and its log marks once it got its first task."""
        marks: dict[str, dict[str, float | None]] = {}
        failed: set[str] = set()
        next_log = next_check = 0.0
        while True:
            events = watcher.events()
            candidates = tl.new_pods(events, existing, t0_mono)
            latest = {e.pod: e for e in events}
            now = time.monotonic()
            for pod in candidates:
                last = latest[pod]
                if (last.kind == "DELETED" or last.phase == "Failed") and pod not in failed:
                    failed.add(pod)
                    notes.append(f"executor pod {pod} ended before its first task ({last.phase})")
                if pod in failed or not (last.running or last.terminated) or now < next_log:
                    continue
                with api_errors(f"reading the log of executor pod {pod}"):
                    log = self.pod_log(pod, last.container)
                if log is not None:
                    marks[pod] = tl.executor_marks(log)
                    if marks[pod]["first_task"] is not None:
                        return pod, marks[pod]
            if now >= next_log:
                next_log = now + LOG_POLL_S
            if now >= next_check:
                next_check = now + CHECK_S
                self._moved(to, candidates[0] if candidates else None)
            if now > deadline:
                if not candidates:
                    raise UserError(f"no new executor pod appeared within {self.timeout:g} s of writing "
                                    f"spec.replicas={to}. " + self.why()
                                    + (f" (pod watch: {watcher.problem})" if watcher.problem else ""))
                pod = candidates[-1]
                last = latest[pod]
                seen = marks.get(pod) or {}
                raise UserError(f"executor pod {pod} got no task within {self.timeout:g} s of the decision "
                                f"(phase {last.phase}, node {last.node}, container running: {last.running}, "
                                f"registered with the driver: {seen.get('registered') is not None}); "
                                f"kubectl -n {self.namespace} logs {pod}")
            time.sleep(POLL_S)

    def _wait_removed(self, watcher: PodWatcher, existing: set[str], t0_mono: float, to: int,
                      deadline: float) -> tuple[str | None, float | None]:
        """The deleted executor pod and when the driver first counted `to` executors, none draining."""
        counted: float | None = None
        next_check = 0.0
        while True:
            gone = tl.deleted_pods(watcher.events(), existing, t0_mono)
            if time.monotonic() >= next_check:
                next_check = time.monotonic() + CHECK_S
                self._moved(to, gone[0] if gone else None)
            if counted is None:
                now = time.monotonic()
                if self.counter.read() == (to, 0):
                    counted = now
            if gone and counted is not None:
                return gone[0], counted
            if time.monotonic() > deadline:
                missing = ([] if gone else ["no executor pod was deleted"]) + \
                          ([] if counted is not None else [f"the driver never counted {to} executors"])
                raise UserError(f"scale-in to {to} not done within {self.timeout:g} s of the decision: "
                                f"{' and '.join(missing)}. " + self.why())
            time.sleep(POLL_S)


def _running(pod: dict[str, Any]) -> bool:
    states = [(s.get("state") or {}) for s in (pod.get("status") or {}).get("containerStatuses") or []]
    return (pod.get("status") or {}).get("phase") == "Running" and any("running" in s for s in states)


def _environment(cluster: Cluster, driver: dict[str, Any]) -> str:
    """Nodes (kubelet version, CPUs), this machine's cores, the Spark version."""
    try:
        nodes = cluster.core.api_client.sanitize_for_serialization(cluster.core.list_node()).get("items") or []
    except Exception:  # noqa: BLE001 - only context for the report
        nodes = []
    real, simulated = [], 0
    for n in nodes:
        version = ((n.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", "?")
        if version.startswith("kwok"):
            simulated += 1
            continue
        cpu = ((n.get("status") or {}).get("capacity") or {}).get("cpu", "?")
        real.append(f"{n['metadata']['name']} ({version}, {cpu} CPUs)")
    parts = [f"Nodes: {', '.join(real) or '?'}" + (f" and {simulated} simulated (KWOK)" if simulated else "")]
    parts.append(f"this machine: {os.cpu_count()} cores ({platform.machine()})")
    return "; ".join(parts) + "."


def _app_summary(app: dict[str, Any], driver: dict[str, Any]) -> str:
    spark = (app.get("spec") or {}).get("spark") or {}
    ex, exe = spark.get("executors") or {}, spark.get("executor") or {}
    src = ((spark.get("source") or {}).get("generator") or {})
    load = (f"generator `{src.get('profile')}` {src.get('rate')}→{src.get('peakRate')} records/s"
            if src else "its source")
    return (f"image `{spark.get('image')}`, executors {ex.get('min')}..{ex.get('max')} of {exe.get('cores')} core / "
            f"{exe.get('memory')}, trigger {spark.get('triggerInterval')}, {load}")


def _policy(cluster: Cluster, app: dict[str, Any]) -> tuple[str, str]:
    """(evaluationInterval, words about the mode) of the StreamApp's policy."""
    spec = app.get("spec") or {}
    ref = (spec.get("policyRef") or {}).get("name")
    name, policy = "inline", spec.get("policy")
    if policy is None and ref:
        name = f"`{ref}`"
        try:
            policy = (cluster.custom.get_namespaced_custom_object(GROUP, VERSION, app["metadata"]["namespace"],
                                                                  "elasticitypolicies", ref).get("spec") or {})
        except Exception:  # noqa: BLE001 - only context for the report
            return "?", ""
    policy = policy or {}
    mode = policy.get("mode", "auto")
    if mode == "advisor":
        words = (f"The policy ({name}) is in advisor mode: only the bench's manual overrides change the job"
                 + (f" (`kubectl patch elasticitypolicy {ref} --type=merge -p '{{\"spec\":{{\"mode\":"
                    f"\"advisor\"}}}}'`)." if ref else "."))
    else:
        words = (f"The policy ({name}) is in {mode} mode: the autoscaler may rescale too; a run it disturbs is "
                 "left out of the statistics.")
    return policy.get("evaluationInterval", "30s"), words


def _seconds(duration: str, default: float) -> float:
    from elastream.api.base import parse_duration

    try:
        return parse_duration(duration)
    except (ValueError, TypeError):
        return default


def bench_main(args) -> int:
    """`elastream bench rescale`: measure, print the tables, write --json/--markdown (and the docs with --docs)."""
    if args.repeats < 1:
        raise UserError("--repeats must be at least 1")
    started = time.monotonic()
    say = lambda m: print(m, flush=True)  # noqa: E731
    cluster, default_ns = connect()
    namespace = args.namespace or default_ns
    app = read_app(cluster, namespace, args.app)
    name = app["metadata"]["name"]
    base, lo, hi = check_app(app, args.base)
    driver = driver_pod(cluster, namespace, name)
    ip = driver["status"]["podIP"]
    token = control_token(cluster, namespace, name)
    containers = [c["name"] for c in (driver.get("spec") or {}).get("containers") or []]
    counter = Counter(args.control_url or f"http://{ip}:{managed.CONTROL_PORT}", token,
                      lambda: read_app(cluster, namespace, name))
    problem = counter.probe()
    if problem:
        counter.direct = False
        say(f"note: the driver's control endpoint: {problem}; using status.currentExecutors instead "
            "(--control-url to point at a port-forward)")
    sampler: P99Sampler | None = P99Sampler(args.metrics_url or f"http://{ip}:{managed.METRICS_PORT}/metrics", name)
    problem = sampler.probe()
    if problem:
        say(f"note: no p99 around the rescales: {problem} (--metrics-url to point at a port-forward)")
        sampler = None
    interval, policy_words = _policy(cluster, app)
    jitter = args.jitter if args.jitter is not None else _seconds(interval, 10.0)
    bench = Bench(cluster, namespace, name, base, args.timeout, args.before, args.after, counter, sampler, say, jitter,
                  selector=f"{managed.LABEL_APP}={name},{managed.LABEL_ROLE}=executor",
                  driver=driver["metadata"]["name"],
                  driver_container="driver" if "driver" in containers else (containers[0] if containers else None))
    say(f"bench rescale: StreamApp {namespace}/{name}, {args.repeats} × ({base} -> {base + 1} -> {base}), "
        f"executors {lo}..{hi}; p99 window {args.before:g} s before / {args.after:g} s after each decision")
    if sampler is not None:
        sampler.start()
    done = False
    try:
        for i in range(1, args.repeats + 1):
            bench.measure("out", base, base + 1, i)
            bench.measure("in", base + 1, base, i)
        done = True
    finally:
        if sampler is not None:
            sampler.stop()
        if not done:
            with contextlib.suppress(Exception):
                bench.write_replicas(base)
                say(f"stopped early: spec.replicas set back to {base}")
    meta = {
        "command": "elastream " + shlex.join(sys.argv[1:]),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "elapsed_s": time.monotonic() - started,
        "environment": _environment(cluster, driver),
        "namespace": namespace, "app": name, "app_summary": _app_summary(app, driver),
        "evaluation_interval": interval, "jitter": jitter, "policy": policy_words,
        "count_source": counter.source(),
        "metrics_source": f"the driver's `/metrics` ({sampler.url})" if sampler is not None else "nowhere",
        "before": args.before, "after": args.after, "base": base,
    }
    md = tl.markdown(bench.runs, meta)
    print()
    print(md)
    if args.json:
        Path(args.json).write_text(json_report.dumps({"meta": meta, "runs": [r.to_dict() for r in bench.runs],
                                               "p99_samples": sampler.samples if sampler else [],
                                               "rate_samples": sampler.rates if sampler else []}))
    if args.markdown:
        Path(args.markdown).write_text(md)
    args.docs_markdown = md
    return 0
