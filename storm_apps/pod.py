"""What runs in the pods of a managed Storm StreamApp (image storm_apps/Dockerfile; manifests in
elastream/engines/storm/managed.py):

    python3 -m storm_apps.pod zookeeper|nimbus|supervisor [--local-dir DIR]
    python3 -m storm_apps.pod submit

A daemon gets the app's storm.yaml (the ConfigMap, mounted at $STORM_CONF_DIR) plus what is its own: its state
and log directories and the hostname it is known by ($STORM_HOSTNAME: the pod IP for a supervisor, the Service's
name for Nimbus), written to /var/lib/storm/conf/storm.yaml, and is then exec'd (tini stays PID 1, the JVM gets
the signals). Logs go to the console, so `kubectl logs` shows them; workers log to files under storm.log.dir.

`submit` waits for Nimbus, then submits the built-in topology described by submit.json (in the same ConfigMap)
unless Nimbus already runs a topology of that name (a retried Job must not submit twice).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import yaml

MAINS = {
    "zookeeper": "org.apache.storm.command.DevZookeeper",
    "nimbus": "org.apache.storm.daemon.nimbus.Nimbus",
    "supervisor": "org.apache.storm.daemon.supervisor.Supervisor",
}
STATE = Path(os.environ.get("STORM_STATE_DIR", "/var/lib/storm"))
CONSOLE_LOG4J = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="warn" monitorInterval="0">
  <Appenders>
    <Console name="console" target="SYSTEM_OUT">
      <PatternLayout pattern="%d{yyyy-MM-dd HH:mm:ss.SSS} %c{1.} %t [%p] %msg%n"/>
    </Console>
  </Appenders>
  <Loggers>
    <Root level="info"><AppenderRef ref="console"/></Root>
    <Logger name="org.apache.zookeeper" level="warn"/>
    <Logger name="org.apache.storm.shade" level="warn"/>
  </Loggers>
</Configuration>
"""


def storm_home() -> Path:
    return Path(os.environ.get("STORM_HOME", "/opt/storm"))


def conf_dir() -> Path:
    return Path(os.environ.get("STORM_CONF_DIR", "/etc/elastream-storm"))


def daemon_conf(role: str, base: dict, local_dir: Path, hostname: str | None) -> dict:
    """The daemon's storm.yaml: the app's, plus its own directories and the name it is reached by."""
    conf = dict(base)
    conf.update({"storm.local.dir": str(local_dir), "storm.log.dir": str(STATE / "logs"),
                 "storm.health.check.dir": str(STATE / "healthchecks")})
    if hostname:
        conf["storm.local.hostname"] = hostname
    if role == "zookeeper":
        conf["dev.zookeeper.path"] = str(local_dir / "zookeeper")
    return conf


def write_conf(role: str, local_dir: Path | None = None) -> Path:
    base = yaml.safe_load((conf_dir() / "storm.yaml").read_text()) or {}
    local = local_dir or STATE / "state"
    conf = daemon_conf(role, base, local, os.environ.get("STORM_HOSTNAME") or None)
    out = STATE / "conf"
    for d in (out, local, STATE / "logs", STATE / "healthchecks"):
        d.mkdir(parents=True, exist_ok=True)
    (out / "storm.yaml").write_text(yaml.safe_dump(conf, sort_keys=True))
    (out / "log4j2-console.xml").write_text(CONSOLE_LOG4J)
    return out / "storm.yaml"


def java_command(role: str, conf_file: Path, heap: str) -> list[str]:
    h = storm_home()
    java = Path(os.environ.get("JAVA_HOME", "/usr/lib/jvm/java-17")) / "bin" / "java"
    return [str(java), "-server", f"-Xmx{heap}", "-XX:+UseSerialGC", f"-Ddaemon.name={role}",
            f"-Dstorm.home={h}", f"-Dstorm.log.dir={STATE / 'logs'}", f"-Dstorm.conf.file={conf_file}",
            f"-Dlog4j.configurationFile={conf_file.parent / 'log4j2-console.xml'}",
            "-cp", f"{h}/lib/*:{h}/extlib/*:{h}/conf", MAINS[role]]


def run_daemon(role: str, local_dir: Path | None, heap: str) -> None:
    conf = write_conf(role, local_dir)
    cmd = java_command(role, conf, heap)
    print(f"storm {role}: {' '.join(cmd)}", flush=True)
    os.execv(cmd[0], cmd)


def submit(timeout_s: float) -> int:
    """Submit the app's topology once Nimbus answers; 0 when it runs (submitted now or before)."""
    from storm_apps.nimbus import NimbusClient, NimbusUnavailable
    from storm_apps.topology import submit as submit_topology

    app = json.loads((conf_dir() / "submit.json").read_text())
    host, port = app["nimbusHost"], int(app["nimbusPort"])
    nimbus = NimbusClient(host, port)
    deadline, last = time.monotonic() + timeout_s, ""
    while True:
        try:
            nimbus.cluster()
            break
        except NimbusUnavailable as err:
            last = str(err)
        if time.monotonic() > deadline:
            print(f"submit: Nimbus {host}:{port} did not answer within {timeout_s:.0f}s: {last}", file=sys.stderr)
            return 1
        time.sleep(2.0)
    if nimbus.topology(app["name"]) is not None:
        print(f"submit: topology {app['name']} already runs on Nimbus {host}:{port}; nothing to do", flush=True)
        return 0
    t0 = time.monotonic()
    Path(app["stateDir"]).mkdir(parents=True, exist_ok=True)
    submit_topology(storm_home(), host, port, name=app["name"], app=app["app"],
                    parallelism=app["parallelism"], max_parallelism=app["maxParallelism"], workers=app["workers"],
                    generator=app["generator"], state_dir=Path(app["stateDir"]), duration_s=app.get("durationS"))
    print(f"submit: topology {app['name']} submitted to {host}:{port} in {time.monotonic() - t0:.1f}s "
          f"(executors {app['parallelism']}, tasks {app['maxParallelism']}, {app['workers']} workers)", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m storm_apps.pod", description=__doc__.split("\n\n")[0])
    p.add_argument("role", choices=[*MAINS, "submit"])
    p.add_argument("--local-dir", type=Path, help="storm.local.dir (default /var/lib/storm/state)")
    p.add_argument("--heap", default=os.environ.get("STORM_DAEMON_HEAP", "256m"), help="the daemon's -Xmx")
    p.add_argument("--timeout", type=float, default=300.0, help="submit: seconds to wait for Nimbus")
    args = p.parse_args(argv)
    if args.role == "submit":
        return submit(args.timeout)
    run_daemon(args.role, args.local_dir, args.heap)
    return 0  # not reached: exec


if __name__ == "__main__":
    sys.exit(main())
