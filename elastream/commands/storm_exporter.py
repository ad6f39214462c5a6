"""`elastream storm-exporter`: serve one Storm topology's per-component metrics on /metrics for Prometheus."""
from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path

from elastream.errors import UserError


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT (e.g. nimbus.storm.svc:6627)")
    return host, int(port)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "storm-exporter",
        help="serve a Storm topology's per-component metrics for Prometheus",
        description="Poll Nimbus (Thrift) every second for one topology's executors and serve per-component "
        "series (elastream_storm_*: executors, input/processing/emit/ack rates, busy fraction (mean, busiest "
        "executor), latencies, backlog) on http://LISTEN/metrics, labelled app=APP. A StreamApp attached to the "
        "topology (spec.storm.attach) is evaluated from these series through Prometheus. See docs/storm.md.")
    p.add_argument("--nimbus", type=_address, required=True, metavar="HOST:PORT", help="Nimbus Thrift address")
    p.add_argument("--topology", required=True, help="topology name on Nimbus")
    p.add_argument("--app", help="the StreamApp's name (label app); default: the topology name")
    p.add_argument("--listen", type=_address, default=("0.0.0.0", 9500), metavar="HOST:PORT",
                   help="where to serve /metrics (default 0.0.0.0:9500)")
    p.add_argument("--source-state", type=Path, metavar="DIR",
                   help="the built-in spout's state directory: its offered rate, backlog and pending tuples")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from storm_apps.exporter import StormExporter, serve
    from storm_apps.nimbus import NimbusClient

    exporter = StormExporter(NimbusClient(*args.nimbus), args.topology, args.app or args.topology, args.source_state)
    host, port = args.listen
    try:
        server, _thread = serve(exporter, port, host)
    except OSError as err:
        raise UserError(f"--listen {host}:{port}: {err.strerror or err}") from err
    print(f"storm-exporter: topology {args.topology} on Nimbus {args.nimbus[0]}:{args.nimbus[1]}, "
          f"metrics on http://{host}:{port}/metrics", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    server.shutdown()
    return 0
