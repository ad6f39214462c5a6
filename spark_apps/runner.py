"""The driver-side runner: start an app with a checkpoint, export its metrics, serve the control endpoint.

    python -m spark_apps.runner --app wordcount --master spark://127.0.0.1:7077 --checkpoint /tmp/ck --sink /tmp/out \\
        --metrics-port 9108 --control-port 9109 --token-file token --profile step --rate 500 --peak-rate 1500 --period 30s

Executors are rescaled in place (standalone, local-cluster, Kubernetes masters). On a plain local[N] master, or with
--rescale restart, a new target restarts the query from its checkpoint with N threads / N executors instead.
The first session to come up writes <checkpoint>/elastream-run.json (app, source, generator start time) so a
restart replays the same records; spark_apps.verify reads it too.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

from spark_apps import sink
from spark_apps.apps import APPS, AppOptions, from_file, with_record_cost
from spark_apps.control import ControlServer, NotPossible
from spark_apps.executors import InPlaceExecutors, in_place_possible, local_threads
from spark_apps.in_place import IN_PLACE_CONF
from spark_apps.kafka_source import KafkaException, Watermarks, lag
from spark_apps.metrics import Listener, Metrics, observe_input, planned_end
from spark_apps.profile import PROFILES, parse_duration
from spark_apps.source import GeneratorConfig, KafkaConfig, SourceConfig

log = logging.getLogger("spark_apps.runner")
RUN_FILE = "elastream-run.json"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m spark_apps.runner", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--app", choices=sorted(APPS), help="a built-in streaming application")
    which.add_argument("--app-file", metavar="PATH",
                       help="a Python file defining build(df, args) -> DataFrame and OUTPUT_MODE (docs/spark_apps.md)")
    p.add_argument("--app-arg", action="append", default=[], metavar="ARG",
                   help="an argument passed to the --app-file's build() (repeat; --app-arg=-x for a leading dash)")
    p.add_argument("--name", help="value of the `app` metric label (default: the app's name)")
    p.add_argument("--master", default="local[2]", help="Spark master: spark://host:port, local-cluster[N,C,M], local[N]")
    p.add_argument("--checkpoint", required=True, help="checkpoint directory (reused on restart)")
    p.add_argument("--sink", required=True, help="output directory: one sub-directory per micro-batch")
    p.add_argument("--query-name", help="streaming query name, the `query` metric label (default: --app)")
    p.add_argument("--trigger", default="1s", help="micro-batch trigger interval (0 = as fast as possible)")
    ex = p.add_argument_group("executors")
    ex.add_argument("--executors", type=int, default=1, help="executors at start")
    ex.add_argument("--min-executors", type=int, default=1, help="smallest target the control endpoint accepts")
    ex.add_argument("--max-executors", type=int, default=4, help="largest target the control endpoint accepts")
    ex.add_argument("--rescale", choices=["auto", "in-place", "restart"], default="auto",
                    help="auto: in place where the master supports it, else restart from the checkpoint")
    ex.add_argument("--executor-memory", default="768m", help="spark.executor.memory")
    ex.add_argument("--executor-cores", type=int, default=1, help="spark.executor.cores")
    ex.add_argument("--shuffle-partitions", type=int, default=8,
                    help="spark.sql.shuffle.partitions; pinned by the checkpoint, bounds useful parallelism")
    src = p.add_argument_group("source")
    src.add_argument("--source", choices=["generator", "kafka"], default="generator", help="where records come from")
    src.add_argument("--profile", choices=PROFILES, default="constant", help="generator: shape of the offered rate")
    src.add_argument("--rate", type=float, default=1000.0, help="generator: base rate, records/s")
    src.add_argument("--peak-rate", type=float, help="generator: step/sinusoid peak, records/s (default 2x rate)")
    src.add_argument("--period", help="generator: step length or sinusoid period, e.g. 30s (default 60s)")
    src.add_argument("--trace", help="generator: CSV file with header time,rate (profile trace)")
    src.add_argument("--duration", help="generator: stop offering after this long, e.g. 2m (default: never)")
    src.add_argument("--source-partitions", type=int, default=4, help="generator: read tasks per micro-batch")
    src.add_argument("--max-records-per-batch", type=int,
                     help="admission control (generator; Kafka maxOffsetsPerTrigger); the rest waits as backlog")
    src.add_argument("--kafka-bootstrap-servers", help="kafka: host:port[,host:port]")
    src.add_argument("--kafka-topic", help="kafka: topic to read")
    src.add_argument("--kafka-starting-offsets", choices=["earliest", "latest"], default="latest")
    app = p.add_argument_group("app options")
    app.add_argument("--window", default="10s", help="fixwindow: window length")
    app.add_argument("--record-cost", default="0s",
                     help="time each input record holds the task that reads it, as a per-record call to an outside service "
                          "would (waits, does not compute), e.g. 250us; 0s: none")
    app.add_argument("--repartition", type=int, help="repartition: partitions after the shuffle (default: shuffle partitions)")
    srv = p.add_argument_group("endpoints")
    srv.add_argument("--metrics-port", type=int, default=9108, help="Prometheus /metrics port")
    srv.add_argument("--control-port", type=int, default=9109, help="control endpoint port")
    srv.add_argument("--bind-address", default="0.0.0.0", help="address both endpoints listen on")
    srv.add_argument("--token-file", help="file holding the control endpoint's bearer token "
                                          "(default: $ELASTREAM_CONTROL_TOKEN)")
    misc = p.add_argument_group("misc")
    misc.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark configuration")
    misc.add_argument("--progress-log", help="append one JSON line per micro-batch to this file")
    misc.add_argument("--stop-when-done", action="store_true",
                      help="exit once a generator with --duration has offered everything and all of it is processed")
    misc.add_argument("--ui", action="store_true", help="enable the Spark web UI")
    return p


def source_config(args) -> SourceConfig:
    if args.source == "kafka" and not (args.kafka_bootstrap_servers and args.kafka_topic):
        raise SystemExit("--source kafka needs --kafka-bootstrap-servers and --kafka-topic")
    gen = GeneratorConfig(args.profile, args.rate, args.peak_rate, args.period, args.trace, args.duration)
    gen.build()  # fail fast on a bad profile
    kafka = (KafkaConfig(args.kafka_bootstrap_servers, args.kafka_topic, args.kafka_starting_offsets)
             if args.source == "kafka" else None)
    return SourceConfig(args.source, gen, kafka, args.source_partitions, args.max_records_per_batch)


def is_local(location: str) -> bool:
    """A directory of this machine (or a mounted volume), not an object-store URL such as s3a://."""
    return "://" not in location or location.startswith("file://")


def run_directory(checkpoint: str, sink: str) -> str:
    """Where the run file lives: beside the checkpoint's offsets, or — the checkpoint being in an object store —
    in `run/` beside the sink (on the shared volume)."""
    if is_local(checkpoint):
        return checkpoint.removeprefix("file://")
    return os.path.join(os.path.dirname(sink.rstrip("/")), "run")


def prepare_directories(*directories: str) -> None:
    """Create local checkpoint and sink directories group-writable (the executors share the driver's group on a
    shared volume); URLs such as s3a:// are left to Spark. Fails with a message naming an unwritable volume."""
    old = os.umask(0o002)
    try:
        for directory in directories:
            if not is_local(directory):
                continue
            path = Path(directory.removeprefix("file://"))
            try:
                path.mkdir(parents=True, exist_ok=True)
            except PermissionError as err:
                raise SystemExit(f"cannot create {path} as uid {os.getuid()}: {err.strerror}; the volume must be "
                                 "writable by this user or group (docs/api.md, spark.storage)") from None
    finally:
        os.umask(old)


def load_or_create_run(checkpoint: str, app: str, cfg: SourceConfig, window: float) -> dict:
    """The run's identity. A checkpoint is only meaningful with the same app and source (its offsets count
    records of that generator), so a mismatch is refused rather than silently replaying different data. A new run
    has no `start_us` yet: `start_load_clock` sets it once the first session is up."""
    path = Path(checkpoint) / RUN_FILE
    run = {"app": app, "source": dataclasses.asdict(cfg), "window": window}
    if path.exists():
        old = json.loads(path.read_text())
        mismatched = [k for k in ("app", "source", "window") if old.get(k) != run[k]]
        if mismatched:
            raise SystemExit(f"checkpoint {checkpoint} belongs to a run with different {', '.join(mismatched)}; "
                             "use a new checkpoint directory")
        return old
    return run


def start_load_clock(checkpoint: str, run: dict) -> None:
    """Start the generator's load now, unless this run's load already started (a restart replays it): the JVM's
    start-up, which takes a minute on a busy machine, must not eat into a load the job cannot read yet."""
    if "start_us" in run:
        return
    path = Path(checkpoint) / RUN_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    run["start_us"] = int(time.time() * 1e6)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(run, indent=1))
    os.replace(tmp, path)  # atomic: a crash leaves the old file or the new one


def read_token(args) -> str:
    token = Path(args.token_file).read_text().strip() if args.token_file else os.environ.get("ELASTREAM_CONTROL_TOKEN", "")
    if not token:
        raise SystemExit("a control token is needed: --token-file or $ELASTREAM_CONTROL_TOKEN")
    return token


class Runner:
    """Owns the SparkSession and the query; restarts them when the rescale mode is restart."""

    def __init__(self, args):
        self.args = args
        self.app = APPS[args.app] if args.app else from_file(args.app_file, args.app_arg)
        self.name = args.name or self.app.name
        self.query_name = args.query_name or self.app.name
        self.source = source_config(args)
        self.window = parse_duration(args.window)
        self.record_cost = parse_duration(args.record_cost)
        self.trigger = parse_duration(args.trigger)
        run_dir = run_directory(args.checkpoint, args.sink)
        prepare_directories(args.checkpoint, args.sink, run_dir)
        # a checkpoint belongs to one application: a built-in one by name, a file by its path
        self.run_dir = run_dir
        self.run_info = load_or_create_run(run_dir, args.app or args.app_file, self.source, self.window)
        self.profile = self.source.generator.build()
        kafka = self.source.kafka
        self.watermarks = Watermarks(kafka.bootstrap_servers, kafka.topic) if self.source.type == "kafka" else None
        self.in_place = args.rescale == "in-place" or (args.rescale == "auto" and in_place_possible(args.master))
        if self.in_place and not in_place_possible(args.master):
            raise SystemExit(f"--rescale in-place is not possible on {args.master}: it has no executors to add")
        if not args.min_executors <= args.executors <= args.max_executors:
            raise SystemExit(f"--executors {args.executors} is outside {args.min_executors}..{args.max_executors}")
        self.minimum, self.maximum = args.min_executors, args.max_executors
        self.target = args.executors
        self.spark = self.query = self.execs = None
        self.session_master = ""
        self.stop_event, self.restart_event = threading.Event(), threading.Event()
        self.metrics = Metrics(self.name, self.trigger, self.backlog, self.counts, args.progress_log,
                               task_seconds=self.task_seconds)

    # --- the Scaler the control endpoint drives -------------------------------------------------------------
    def state(self) -> dict:
        current, target = self.counts()
        return {"current": current, "target": target, "min": self.minimum, "max": self.maximum,
                "draining": self._draining(), "ids": self._ids(),
                "mode": "in-place" if self.in_place else "restart"}

    def _ids(self) -> list[str]:
        try:
            return self.execs.ids() if self.execs else []
        except Exception:  # noqa: BLE001 - restarting
            return []

    def _draining(self) -> int:
        try:
            return self.execs.draining() if self.execs else 0
        except Exception:  # noqa: BLE001 - restarting
            return 0

    def set_target(self, n: int) -> None:
        if self.in_place:
            self.execs.set_target(n)
            self.target = n
        elif n != self.target:
            self.target = n
            self.restart_event.set()

    def replace(self, executor_ids: list[str]) -> list[str]:
        if not self.in_place or self.execs is None:
            raise NotPossible("this job rescales by restarting (or is starting): it has no executors to replace")
        return self.execs.replace(executor_ids)

    def task_seconds(self) -> dict[str, float]:
        """Task seconds per live executor ({} while a session (re)starts or on local[N])."""
        execs = self.execs
        return execs.task_seconds() if execs is not None else {}

    def counts(self) -> tuple[int, int]:
        """(current, target). While a session is (re)starting there are no executors yet: (0, target)."""
        execs = self.execs
        try:
            if execs is not None:
                return execs.current(), (execs.target if self.in_place else self.target)
            if self.spark is None or in_place_possible(self.session_master):
                return 0, self.target
            return local_threads(self.session_master), self.target
        except Exception:  # noqa: BLE001 - the JVM may be going away under a restart
            return 0, self.target

    # --- metrics read at scrape time --------------------------------------------------------------------------
    def backlog(self, query: str) -> int | None:
        if self.source.type == "generator":
            if "start_us" not in self.run_info:  # the first session is not up: no load yet
                return None
            offered = self.profile.offered_count(time.time() - self.run_info["start_us"] / 1e6)
            return max(0, offered - self._generator_read(query))
        last = self.metrics.last.get(query)
        if not last:
            return None
        processed = json.loads(last["end_offsets"][0] or "{}") if last["end_offsets"] else {}
        try:  # the broker's offsets now: what arrived during a long batch is lag already
            return lag(processed, self.watermarks(timeout_s=2.0), self.source.kafka.topic)
        except KafkaException:  # unreachable for now: the offsets the last batch saw
            return sum(_kafka_behind(end, latest) for end, latest in zip(last["end_offsets"], last["latest_offsets"]))

    def _generator_read(self, query: str) -> int:
        """Records read so far: the newest planned batch's end in a local checkpoint (fresh), else the end offset
        of the last batch reported (an object-store checkpoint is not read from here)."""
        if is_local(self.args.checkpoint):
            planned = planned_end(self.args.checkpoint.removeprefix("file://"))
            return planned["seq"] if planned else 0
        last = self.metrics.last.get(query)
        if not last or not last["end_offsets"] or not last["end_offsets"][0]:
            return 0
        return int(json.loads(last["end_offsets"][0]).get("seq", 0))

    # --- Spark ------------------------------------------------------------------------------------------------
    def master(self) -> str:
        if self.in_place or in_place_possible(self.args.master):
            return self.args.master
        return f"local[{self.target}]"

    def session_conf(self) -> dict[str, str]:
        a = self.args
        conf = {
            "spark.app.name": f"elastream-{self.name}",
            "spark.executor.cores": str(a.executor_cores),
            "spark.executor.memory": a.executor_memory,
            "spark.executor.instances": str(self.target),
            "spark.sql.shuffle.partitions": str(a.shuffle_partitions),
            **IN_PLACE_CONF,
            "spark.ui.enabled": "true" if a.ui else "false",
            "spark.pyspark.python": sys.executable,
            "spark.pyspark.driver.python": sys.executable,
            "spark.sql.streaming.metricsEnabled": "true",
        }
        if "127.0.0.1" in a.master or "localhost" in a.master or a.master.startswith("local"):
            conf["spark.driver.host"] = conf["spark.driver.bindAddress"] = "127.0.0.1"
        for item in a.conf:
            key, sep, value = item.partition("=")
            if not sep:
                raise SystemExit(f"--conf {item!r}: expected KEY=VALUE")
            conf[key] = value
        return conf

    def start_session(self):
        from pyspark.sql import SparkSession

        os.environ["PYSPARK_PYTHON"] = sys.executable  # executors and the source planner import spark_apps
        self.session_master = self.master()
        builder = SparkSession.builder.master(self.session_master)
        for k, v in self.session_conf().items():
            builder = builder.config(k, v)
        started = time.monotonic()
        self.spark = builder.getOrCreate()
        self.spark.sparkContext.setLogLevel("WARN")
        self.spark.streams.addListener(Listener(self.metrics))
        if in_place_possible(self.session_master):
            # also in restart mode on a cluster master: the extras standalone launches must be trimmed
            self.execs = InPlaceExecutors(self.spark.sparkContext, self.minimum, self.maximum, self.target)
            self.execs.reconcile()
        log.info("session on %s up in %.1fs", self.master(), time.monotonic() - started)

    def start_query(self):
        from spark_apps import source

        app = self.app
        df = with_record_cost(observe_input(source.load(self.spark, self.source, self.run_info["start_us"])),
                              self.record_cost)
        opts = AppOptions(partitions=self.args.repartition or self.args.shuffle_partitions, window=self.window)
        out = app.build(df, opts)
        writer = (out.writeStream.queryName(self.query_name).outputMode(app.output_mode)
                  .foreachBatch(sink.writer(self.args.sink, app.per_batch))
                  .option("checkpointLocation", self.args.checkpoint)
                  .trigger(processingTime=f"{int(self.trigger * 1000)} milliseconds"))
        self.query = writer.start()
        log.info("query %s started (app %s, checkpoint %s)", self.query_name, self.args.app or self.args.app_file,
                 self.args.checkpoint)

    def stop_spark(self) -> None:
        if self.query is not None:
            try:
                self.query.stop()
            except Exception:  # noqa: BLE001 - stopping anyway
                log.exception("query stop failed")
        if self.spark is not None:
            self.spark.stop()
        self.query = self.spark = self.execs = None

    def done(self) -> bool:
        total = self.profile.total()
        last = self.metrics.last.get(self.query_name)
        if total is None or self.source.type != "generator" or not last or not last["end_offsets"]:
            return False
        return json.loads(last["end_offsets"][0]).get("seq") == total

    def _reconcile_loop(self) -> None:
        while not self.stop_event.wait(0.5):
            execs = self.execs
            if execs is not None:
                try:
                    execs.reconcile()
                except Exception:  # noqa: BLE001 - the session may be stopping
                    log.debug("reconcile skipped", exc_info=True)

    def run(self) -> int:
        token = read_token(self.args)
        self.metrics.serve(self.args.metrics_port, self.args.bind_address)
        control = ControlServer(self, token, self.args.control_port, self.args.bind_address).start()
        threading.Thread(target=self._reconcile_loop, name="reconcile", daemon=True).start()
        log.info("metrics on :%d, control on :%d", self.args.metrics_port, control.port)
        try:
            while True:
                self.start_session()
                start_load_clock(self.run_dir, self.run_info)
                self.start_query()
                outcome = self._wait()
                if outcome != "restart":
                    return 0 if outcome in ("stop", "done") else 1
                began = time.monotonic()
                self.stop_spark()
                self.restart_event.clear()
                log.info("restarting with %d to rescale (stop took %.1fs)", self.target, time.monotonic() - began)
        finally:
            self.stop_event.set()
            self.stop_spark()
            control.stop()
            if self.watermarks is not None:
                self.watermarks.close()

    def _wait(self) -> str:
        while True:
            if self.query.awaitTermination(0.5):
                err = self.query.exception()
                log.error("query terminated: %s", err)
                return "failed" if err else "stop"
            if self.stop_event.is_set():
                return "stop"
            if self.restart_event.is_set():
                return "restart"
            if self.args.stop_when_done and self.done():
                log.info("all %d records processed; stopping", self.profile.total())
                return "done"


def _kafka_behind(end: str | None, latest: str | None) -> int:
    if not end or not latest:
        return 0
    e, l = json.loads(end), json.loads(latest)
    return sum(max(0, int(off) - int(e.get(t, {}).get(p, 0))) for t, parts in l.items() for p, off in parts.items())


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    runner = Runner(args)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: runner.stop_event.set())
    return runner.run()


if __name__ == "__main__":
    sys.exit(main())
