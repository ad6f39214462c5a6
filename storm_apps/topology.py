"""The built-in topologies and how they are submitted: a Flux YAML (Storm's declarative topology) plus a topology
jar made of flux-core, flux-wrappers, our WorkBolt and the Python components (storm_apps/resources).

- The spout is Python (storm_apps.source: rate-controlled by a load profile, replayable, offsets committed on ack).
- The sink is Python: it writes every tuple's (seq, part, parts) before acking it, for storm_apps.verify.
- The bolts between are WorkBolt (Java): a per-tuple cost spent waiting, one thread per executor, so capacity
  follows executors (a Python bolt runs one process per TASK whatever its executors: notes/storm-cluster.md).

Every component is submitted with tasks = its max parallelism (Storm caps executors at tasks, silently), acking
on, one acker, and plain shuffle (not Storm 2's locality-aware one: LOAD_AWARE_OFF).
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
SHELL_SPOUT = "org.apache.storm.flux.wrappers.spouts.FluxShellSpout"
SHELL_BOLT = "org.apache.storm.flux.wrappers.bolts.FluxShellBolt"
WORK_BOLT = "io.elastream.storm.WorkBolt"
FIELDS = ["seq", "part", "parts", "word"]
SPOUT, SINK = "spout", "sink"
# Storm 2's shuffle is load-aware and locality-aware: it sends only to the downstream executors in its own worker
# until their receive queues pass 80 % full — never, at 500 tuples pending — so executors a rebalance adds in other
# workers get nothing (a real run: enrich 1→4 executors, still one executor's 40 tuples/s). Plain shuffle spreads
# over every task, and a component's capacity follows its executors, as the planners assume.
LOAD_AWARE_OFF = "topology.disable.loadaware.messaging"


@dataclass(frozen=True)
class WorkStage:
    """A WorkBolt: mode split|count|forward, `cost_ms` per tuple, fed by `upstream`."""

    name: str
    mode: str
    cost_ms: float
    upstream: str
    by_word: bool = False  # fields grouping on the word (a keyed count), else shuffle


@dataclass(frozen=True)
class Topology:
    name: str
    stages: tuple[WorkStage, ...]
    default_max_parallelism: dict[str, int] = field(default_factory=dict)

    @property
    def components(self) -> list[tuple[str, str, tuple[str, ...]]]:
        """(name, kind, upstream) in topological order: spout, the work stages, sink."""
        return [(SPOUT, "spout", ()), *((s.name, "bolt", (s.upstream,)) for s in self.stages),
                (SINK, "bolt", (self.stages[-1].name,))]


APPS = {
    # one sentence -> 3..6 words: split costs per sentence, count per word
    "wordcount": Topology("wordcount", (WorkStage("split", "split", 20.0, SPOUT),
                                        WorkStage("count", "count", 8.0, "split", by_word=True)),
                          {SPOUT: 1, "split": 4, "count": 6, SINK: 1}),
    # three stages of different costs: per-component plans differ
    "pipeline": Topology("pipeline", (WorkStage("parse", "forward", 4.0, SPOUT),
                                      WorkStage("enrich", "forward", 25.0, "parse"),
                                      WorkStage("aggregate", "count", 10.0, "enrich", by_word=True)),
                         {SPOUT: 1, "parse": 4, "enrich": 8, "aggregate": 4, SINK: 1}),
}


def flux_yaml(name: str, app: str, *, parallelism: dict[str, int], max_parallelism: dict[str, int], workers: int,
              generator: dict, state_dir: Path, python: str = sys.executable, max_pending: int = 500) -> dict:
    """The Flux definition of built-in topology `app`, named `name`."""
    topology = APPS[app]
    sizing = {c: {"parallelism": parallelism.get(c, 1), "numTasks": max_parallelism.get(c, 1)}
              for c, _, _ in topology.components}
    fields = list(FIELDS)
    return {
        "name": name,
        "config": {"topology.workers": workers, "topology.acker.executors": 1,
                   "topology.max.spout.pending": max_pending, "topology.message.timeout.secs": 30,
                   "topology.debug": False, LOAD_AWARE_OFF: True},
        "spouts": [{"id": SPOUT, "className": SHELL_SPOUT, **sizing[SPOUT], "constructorArgs": [
            [python, "elastream_spout.py", str(state_dir), json.dumps(generator)], fields]}],
        "bolts": [*({"id": s.name, "className": WORK_BOLT, **sizing[s.name],
                     "constructorArgs": [s.mode, float(s.cost_ms)]} for s in topology.stages),
                  {"id": SINK, "className": SHELL_BOLT, **sizing[SINK],
                   "constructorArgs": [[python, "elastream_sink.py", str(state_dir)], fields]}],
        "streams": [{"from": up, "to": c, "grouping": _grouping(topology, c)}
                    for c, _, ups in topology.components for up in ups],
    }


def _grouping(topology: Topology, component: str) -> dict:
    stage = next((s for s in topology.stages if s.name == component), None)
    if stage is not None and stage.by_word:
        return {"type": "FIELDS", "args": ["word"]}
    return {"type": "SHUFFLE"}


def topology_jar(storm_home: Path) -> Path:
    """flux-core (without its slf4j: the workers have one), flux-wrappers, WorkBolt and the Python components in
    resources/, cached next to ${storm.home} and keyed by their contents."""
    parts = sorted((storm_home / "flux").glob("*.jar")) + sorted((storm_home / "bolts").glob("*.jar"))
    scripts = sorted((HERE / "resources").glob("*.py"))
    h = hashlib.sha256()
    for p in [*parts, *scripts]:
        h.update(p.name.encode())
        h.update(p.read_bytes())
    jar = storm_home.parent / f"topology-{h.hexdigest()[:12]}.jar"
    if jar.exists():
        return jar
    tmp = jar.with_name(f".{jar.name}.{os.getpid()}")  # two runs building at once never share a half-written file
    seen: set[str] = set()
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as out:
        for part in parts:
            with zipfile.ZipFile(part) as z:
                for item in z.infolist():
                    n = item.filename
                    if n in seen or n.startswith("org/slf4j/") or n.upper().startswith("META-INF/") and (
                            n.upper().endswith((".SF", ".RSA", ".DSA")) or n.upper() == "META-INF/MANIFEST.MF"):
                        continue
                    seen.add(n)
                    out.writestr(item, z.read(n))
        for script in scripts:
            out.write(script, f"resources/{script.name}")
    tmp.replace(jar)
    return jar


def submit(storm_home: Path, nimbus_host: str, nimbus_port: int, *, name: str, app: str,
           parallelism: dict[str, int], max_parallelism: dict[str, int], workers: int, generator: dict,
           state_dir: Path, duration_s: float | None = None, timeout_s: float = 120.0) -> None:
    """Submit built-in topology `app` as `name` through Flux (--remote), to the Nimbus at host:port."""
    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    generator = {k: v for k, v in generator.items() if v is not None}
    if duration_s:
        generator["duration"] = float(duration_s)
    definition = state_dir.parent / f"{name}.flux.yaml"
    definition.write_text(yaml.safe_dump(flux_yaml(
        name, app, parallelism=parallelism, max_parallelism=max_parallelism, workers=workers,
        generator=generator, state_dir=state_dir.resolve()), sort_keys=False))
    client_conf = state_dir.parent / f"{name}.client.yaml"
    client_conf.write_text(yaml.safe_dump({"nimbus.seeds": [nimbus_host], "nimbus.thrift.port": int(nimbus_port)}))
    jar = topology_jar(Path(storm_home))
    h = Path(storm_home)
    cmd = ["java", "-Xmx256m", f"-Dstorm.jar={jar}", f"-Dstorm.home={h}", f"-Dstorm.conf.file={client_conf}",
           f"-Dlog4j.configurationFile={h / 'log4j2' / 'cluster.xml'}", f"-Dstorm.log.dir={state_dir.parent}",
           "-Ddaemon.name=submit", "-cp", f"{h}/lib/*:{h}/extlib/*:{jar}:{h}/conf",
           "org.apache.storm.flux.Flux", "--remote", str(definition)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0:
        raise RuntimeError(f"submitting topology {name} failed ({proc.returncode}):\n"
                           f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
