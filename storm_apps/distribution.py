"""A `${storm.home}` for Storm 2.8.3 made from Maven Central jars (the tarball is not on any registry we reach),
cached under ~/.cache/elastream/storm/, keyed by the pom files, the Java sources and this layout: only the first
call downloads (about 240 MB, 30-60 s), later calls return at once.

Layout: lib/ (daemons: storm-core without storm-clojure), lib-worker/ (workers: storm-client), extlib/, flux/
(flux-core and flux-wrappers, for the topology jar), bolts/ (our WorkBolt, built with Maven), log4j2/, conf/;
extlib/ holds our scheduler (PlanScheduler, built with Maven), which Nimbus uses when `storm.scheduler` names it.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

STORM_VERSION = "2.8.3"
HERE = Path(__file__).resolve().parent
BOLTS_JAR = "elastream-storm-bolts-0.1.0.jar"
SCHEDULER_JAR = "elastream-storm-scheduler-0.1.0.jar"
SCHEDULER_CLASS = "io.elastream.storm.scheduler.PlanScheduler"  # Nimbus loads it from extlib/ (storm.scheduler)
FLUX_ARTIFACTS = ("flux-core", "flux-wrappers")  # their parent POM is missing on Central: fetched without deps

LOG4J = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="warn" monitorInterval="0">
  <Appenders>
    <RollingFile name="file" fileName="${{sys:storm.log.dir}}/{name}.log"
                 filePattern="${{sys:storm.log.dir}}/{name}.log.%i">
      <PatternLayout pattern="%d{{yyyy-MM-dd HH:mm:ss.SSS}} %c{{1.}} %t [%p] %msg%n"/>
      <Policies><SizeBasedTriggeringPolicy size="20 MB"/></Policies>
      <DefaultRolloverStrategy max="2"/>
    </RollingFile>
  </Appenders>
  <Loggers>
    <Root level="info"><AppenderRef ref="file"/></Root>
    <Logger name="org.apache.zookeeper" level="warn"/>
    <Logger name="org.apache.storm.shade" level="warn"/>
  </Loggers>
</Configuration>
"""


def cache_root() -> Path:
    return Path(os.environ.get("ELASTREAM_CACHE", Path.home() / ".cache" / "elastream")) / "storm"


def _key() -> str:
    h = hashlib.sha256(STORM_VERSION.encode())
    for path in sorted([*(HERE / "maven").rglob("pom.xml"), *(HERE / "java").rglob("*.java"),
                        *(HERE / "scheduler").rglob("*.java"), HERE / "java" / "pom.xml",
                        HERE / "scheduler" / "pom.xml", Path(__file__)]):
        h.update(path.relative_to(HERE).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def storm_home() -> Path:
    """The cached ${storm.home}; built (atomically) on first use."""
    home = cache_root() / f"{STORM_VERSION}-{_key()}"
    if (home / ".complete").exists():
        return home
    home.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{home.name}-", dir=home.parent))
    try:
        _build(tmp)
        (tmp / ".complete").write_text(STORM_VERSION)
        try:
            tmp.rename(home)
        except OSError:  # another process made it first
            if not (home / ".complete").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return home


def _mvn(*args: str, cwd: Path | None = None) -> None:
    proc = subprocess.run(["mvn", "-q", "-B", *args], cwd=cwd, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"mvn {' '.join(args)} failed:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}")


def _package(module: Path, jar: Path, home: Path) -> None:
    """`mvn package` a copy of our Java module and keep its jar at `jar`."""
    build = home / f"{module.name}-build"
    shutil.copytree(module, build)
    _mvn("package", "-DskipTests", cwd=build)
    shutil.copy(build / "target" / jar.name, jar)
    shutil.rmtree(build)


def _build(home: Path) -> None:
    print(f"storm: laying out Storm {STORM_VERSION} from Maven Central into {home.parent} (first use only)", flush=True)
    for sub, pom in (("lib", "server"), ("lib-worker", "worker")):
        _mvn("-f", str(HERE / "maven" / pom / "pom.xml"), "dependency:copy-dependencies",
             f"-DoutputDirectory={home / sub}", "-DincludeScope=runtime")
    for artifact in FLUX_ARTIFACTS:
        _mvn("dependency:copy", f"-Dartifact=org.apache.storm:{artifact}:{STORM_VERSION}",
             f"-DoutputDirectory={home / 'flux'}", cwd=home)
    for sub in ("bolts", "extlib", "conf", "log4j2"):
        (home / sub).mkdir(exist_ok=True)
    _package(HERE / "java", home / "bolts" / BOLTS_JAR, home)
    _package(HERE / "scheduler", home / "extlib" / SCHEDULER_JAR, home)
    (home / "log4j2" / "cluster.xml").write_text(LOG4J.format(name="${sys:daemon.name}"))
    (home / "log4j2" / "worker.xml").write_text(LOG4J.format(name="worker-${sys:worker.port}"))


if __name__ == "__main__":
    print(storm_home())
