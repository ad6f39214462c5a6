"""Kafka 4.1.1's broker classpath from Maven Central (no tarball download: the jars and their runtime closure, about
45 MB), cached under ~/.cache/elastream/kafka/, keyed by the pom and this file: only the first call resolves (about
a minute), later calls return at once."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

KAFKA_VERSION = "4.1.1"
HERE = Path(__file__).resolve().parent
POM = HERE / "maven" / "pom.xml"

LOG4J = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="warn" monitorInterval="0">
  <Appenders>
    <RollingFile name="file" fileName="${sys:kafka.logs.dir}/server.log" filePattern="${sys:kafka.logs.dir}/server.log.%i">
      <PatternLayout pattern="%d{yyyy-MM-dd HH:mm:ss.SSS} %c{1.} [%p] %msg%n"/>
      <Policies><SizeBasedTriggeringPolicy size="20 MB"/></Policies>
      <DefaultRolloverStrategy max="2"/>
    </RollingFile>
  </Appenders>
  <Loggers>
    <Root level="info"><AppenderRef ref="file"/></Root>
    <Logger name="kafka.request.logger" level="warn"/>
    <Logger name="org.apache.kafka.controller" level="warn"/>
  </Loggers>
</Configuration>
"""


def cache_root() -> Path:
    return Path(os.environ.get("ELASTREAM_CACHE", Path.home() / ".cache" / "elastream")) / "kafka"


def _key() -> str:
    h = hashlib.sha256(KAFKA_VERSION.encode())
    for path in (POM, Path(__file__)):
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def kafka_home() -> Path:
    """The cached home: lib/ (the classpath) and log4j2.xml; built (atomically) on first use."""
    home = cache_root() / f"{KAFKA_VERSION}-{_key()}"
    if (home / ".complete").exists():
        return home
    home.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{home.name}-", dir=home.parent))
    try:
        print(f"kafka: resolving Kafka {KAFKA_VERSION} from Maven Central into {home.parent} (first use only)",
              flush=True)
        proc = subprocess.run(["mvn", "-q", "-B", "-f", str(POM), "dependency:copy-dependencies",
                               f"-DoutputDirectory={tmp / 'lib'}", "-DincludeScope=runtime"],
                              capture_output=True, text=True, timeout=1800)
        if proc.returncode != 0:
            raise RuntimeError(f"mvn dependency:copy-dependencies failed:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
        (tmp / "log4j2.xml").write_text(LOG4J)
        (tmp / ".complete").write_text(KAFKA_VERSION)
        try:
            tmp.rename(home)
        except OSError:  # another process made it first
            if not (home / ".complete").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return home


if __name__ == "__main__":
    print(kafka_home())
