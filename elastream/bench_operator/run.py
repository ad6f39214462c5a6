"""`elastream bench operator`: one operator process, N StreamApps on the current cluster; how soon each is evaluated,
how steadily, at what cost. Each run has a namespace of its own, deleted at the end."""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import kubernetes

from elasticity import json_report
from elastream.bench_operator import measure as m
from elastream.bench_operator.fleet import Fleet, OperatorProcess, hanging_endpoint
from elastream.errors import UserError

POLL_S = 2.0
IDLE_S = 10.0  # the API server's background request rate is measured this long before the operator starts
HANG_S = 60.0  # the hanging endpoint answers after this long (past every client timeout)


def api_client() -> kubernetes.client.ApiClient:
    """A client of its own, from $KUBECONFIG (read now) or ~/.kube/config: the process' default is left alone."""
    try:
        return kubernetes.config.new_client_from_config(config_file=os.environ.get("KUBECONFIG"))
    except (kubernetes.config.ConfigException, FileNotFoundError) as err:
        raise UserError(f"bench operator needs a cluster (KUBECONFIG): {err}") from None


class ApiServerRequests:
    """The API server's count of requests served (apiserver_request_total, every verb and resource)."""

    def __init__(self, api: kubernetes.client.ApiClient):
        self.api = api

    def count(self) -> float:
        headers: dict[str, str] = {}
        self.api.update_params_for_auth(headers, [], ["BearerToken"], "/metrics", "GET", None)
        resp = self.api.call_api("GET", self.api.configuration.host + "/metrics", header_params=headers)
        resp.read()
        lines = [ln for ln in resp.data.decode().splitlines() if ln.startswith(("apiserver_request_total",
                                                                                "# TYPE apiserver_request_total"))]
        return m.total("\n".join(lines) + "\n", "apiserver_request_total")


def one_run(api, apps: int, slow_fraction: float, interval_s: float, window_s: float, first_round_limit_s: float,
            log_dir: Path, env: dict[str, str] | None = None) -> m.RunResult:
    slow = round(apps * slow_fraction)
    with hanging_endpoint(HANG_S) as slow_url:
        fleet = Fleet(api, apps, slow, interval_s, slow_url)
        print(f"creating {apps} StreamApps ({slow} behind a hanging endpoint) in {fleet.namespace} ...", flush=True)
        fleet.create()
        operator = None
        try:
            server = ApiServerRequests(api)
            before, t = server.count(), time.monotonic()
            time.sleep(IDLE_S)
            idle_rate = (server.count() - before - 1) / (time.monotonic() - t)
            operator = OperatorProcess(fleet.namespace, log_dir / f"operator-{fleet.namespace}.log", env)
            started, started_wall = time.monotonic(), time.time()
            result = m.RunResult(apps=apps, slow_apps=slow, interval_s=interval_s, first_round_s=None, evaluated=0)
            result.first_round_s, result.evaluated = _first_round(fleet, operator, started, started_wall,
                                                                  first_round_limit_s)
            _steady_window(fleet, operator, server, idle_rate, window_s, result)
            return result
        finally:
            if operator is not None:
                operator.stop()
            fleet.delete()


def _first_round(fleet: Fleet, operator: OperatorProcess, started: float, started_wall: float,
                 limit_s: float) -> tuple[float | None, int]:
    """Seconds from the operator's start until every app has been evaluated (its status says so), and how many were."""
    evaluated = 0
    while time.monotonic() - started < limit_s:
        operator.check_alive()
        last = fleet.last_evaluations()
        evaluated = sum(1 for t in last.values() if t is not None and t >= int(started_wall))
        print(f"  {time.monotonic() - started:5.0f}s: {evaluated}/{fleet.apps} evaluated", flush=True)
        if evaluated == fleet.apps:
            return time.monotonic() - started, evaluated
        time.sleep(POLL_S)
    return None, evaluated


def _steady_window(fleet: Fleet, operator: OperatorProcess, server: ApiServerRequests, idle_rate: float,
                   window_s: float, result: m.RunResult) -> None:
    """Rates, latencies and costs over a window once the first round is done (or given up)."""
    before_text, requests_before, (_, _, cpu_before), t0 = (operator.metrics(), server.count(), operator.usage(),
                                                            time.monotonic())
    deadline = t0 + window_s
    while time.monotonic() < deadline:
        time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))
        operator.check_alive()
    after_text, requests_after, (rss, peak, cpu_after), t1 = (operator.metrics(), server.count(), operator.usage(),
                                                              time.monotonic())
    elapsed = t1 - t0
    evaluations = (m.total(after_text, "elastream_operator_evaluations_total")
                   - m.total(before_text, "elastream_operator_evaluations_total"))
    result.window_s = elapsed
    result.evaluations_per_s = evaluations / elapsed
    for name, p50, p99 in (("elastream_operator_decision_cpu_seconds", "decision_p50_ms", "decision_p99_ms"),
                           ("elastream_operator_evaluation_seconds", "evaluation_p50_ms", "evaluation_p99_ms")):
        counts = m.delta(m.buckets(after_text, name), m.buckets(before_text, name))
        for q, attr in ((0.5, p50), (0.99, p99)):
            value = m.quantile(q, counts)
            setattr(result, attr, None if value is None else value * 1000)
    result.failed_steps = int(sum(
        _errors(after_text, kind) - _errors(before_text, kind) for kind in ("kubernetes", "internal")))
    result.late_evaluations = int(m.total(after_text, "elastream_operator_late_evaluations_total"))
    result.rss_mb, result.peak_rss_mb = rss, peak
    result.cpu_percent = 100 * (cpu_after - cpu_before) / elapsed
    operator_requests = requests_after - requests_before - idle_rate * elapsed - 1  # less our own /metrics read
    result.api_requests_per_evaluation = operator_requests / evaluations if evaluations else None
    now, statuses = time.time(), fleet.statuses()
    stale = [name for name, t in fleet.last_evaluations(statuses).items()
             if t is None or now - t > 2 * fleet.interval_s]
    result.stale_apps = len(stale)
    result.stale_fast_apps = sum(1 for name in stale if not fleet.is_slow(name))
    result.on_schedule_apps = fleet.on_schedule(statuses)


def _errors(text: str, kind: str) -> float:
    return sum(v for n, labels, v in m.samples(text) if n == "elastream_operator_errors_total" and labels.get("kind") == kind)


def slow_fractions(text: str) -> list[float]:
    """--slow-fractions "0,0.1" -> [0.0, 0.1]; UserError naming the option otherwise."""
    try:
        fractions = [float(f) for f in text.split(",")]
    except ValueError:
        fractions = []
    if not fractions or any(not 0 <= f <= 1 for f in fractions):
        raise UserError(f"--slow-fractions: numbers between 0 and 1, separated by commas, not {text!r}")
    return fractions


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse what would fail later on the cluster, naming the option."""
    if args.apps < 1:
        raise UserError(f"--apps must be at least 1, not {args.apps}")
    if not MIN_INTERVAL_S <= args.interval <= MAX_INTERVAL_S:  # the policy's own bounds (scrapeInterval, 8760h)
        raise UserError(f"--interval must be between {MIN_INTERVAL_S:g} seconds and 8760 hours, not {args.interval:g}")
    for option, value in (("--window", args.window), ("--first-round-limit", args.first_round_limit)):
        if value is not None and not value > 0:
            raise UserError(f"{option} must be above 0 seconds, not {value:g}")


MIN_INTERVAL_S, MAX_INTERVAL_S = 5.0, 8760 * 3600.0


def bench_main(args: argparse.Namespace) -> int:
    fractions = slow_fractions(args.slow_fractions)
    check_arguments(args)
    api = api_client()
    log_dir = Path(args.log_dir or tempfile.mkdtemp(prefix="elastream-bench-operator-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    results = [one_run(api, args.apps, f, args.interval, args.window or max(60.0, 3 * args.interval),
                       args.first_round_limit, log_dir) for f in fractions]
    table = m.table(results)
    print("\n" + table)
    print(f"\noperator logs in {log_dir}")
    if args.json:
        Path(args.json).write_text(json_report.dumps([r.to_json() for r in results]))
    args.docs_markdown = markdown(args, table)
    return 0


def markdown(args: argparse.Namespace, table: str) -> str:
    return (f"## One operator, many StreamApps\n\n"
            f"`elastream bench operator --apps {args.apps} --interval {args.interval:g} "
            f"--slow-fractions {args.slow_fractions}` on the test cluster (`scripts/test-cluster up`, KWOK nodes): "
            "attached StreamApps whose jobs cannot be reached, so each evaluation is a cheap hold and the loop itself "
            "is measured; in the second run a tenth of them sit behind an endpoint that accepts and then answers "
            "nothing for a minute "
            f"(Prometheus and control endpoint: each request waits out its 10 s read timeout).\n\n{table}\n")
