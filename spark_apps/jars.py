"""The JVM parts a user's own Spark application needs beside pyspark: elastream's Spark plugin (built by Maven from
spark_apps/plugin/) and Spark's own Kafka connector with the few jars it needs that pyspark does not ship (from Maven
Central). Cached under ~/.cache/elastream/spark-jars/<key>/, keyed by the pom files, the plugin's sources and this
module: only the first use builds (about a minute with an empty ~/.m2: Maven resolves Spark to compile against).

    python -m spark_apps.jars          # build if needed; print spark.jars (comma-separated)
    python -m spark_apps.jars --dir    # build if needed; print the directory (plugin/, kafka/)
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PLUGIN_JAR = "elastream-spark-plugin-0.1.0.jar"
# what the connector needs that pyspark 4.3.0 lacks; the rest of its runtime tree (hadoop-client, scala-library,
# snappy, lz4, slf4j) is already in pyspark/jars and must not be loaded twice
KAFKA_ARTIFACTS = ("spark-sql-kafka-0-10_2.13", "spark-token-provider-kafka-0-10_2.13", "kafka-clients",
                   "commons-pool2")


def cache_root() -> Path:
    return Path(os.environ.get("ELASTREAM_CACHE", Path.home() / ".cache" / "elastream")) / "spark-jars"


def _key() -> str:
    h = hashlib.sha256()
    plugin = HERE / "plugin"
    for path in sorted([*plugin.rglob("*.java"), plugin / "pom.xml", HERE / "maven" / "kafka-connector" / "pom.xml",
                        Path(__file__)]):
        h.update(path.relative_to(HERE).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def jars_dir() -> Path:
    """The cached directory holding the plugin jar (plugin/) and the Kafka connector's jars (kafka/)."""
    home = cache_root() / _key()
    if (home / ".complete").exists():
        return home
    home.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{home.name}-", dir=home.parent))
    try:
        _build(tmp)
        (tmp / ".complete").write_text(_key())
        try:
            tmp.rename(home)
        except OSError:  # another process made it first
            if not (home / ".complete").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return home


def plugin_jar() -> Path:
    return jars_dir() / "plugin" / PLUGIN_JAR


def kafka_jars() -> list[Path]:
    return sorted((jars_dir() / "kafka").glob("*.jar"))


def spark_jars() -> list[Path]:
    """Every jar a user's application is started with (spark.jars): the plugin, then the Kafka connector."""
    return [plugin_jar(), *kafka_jars()]


def _mvn(*args: str, cwd: Path | None = None) -> None:
    proc = subprocess.run(["mvn", "-q", "-B", *args], cwd=cwd, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"mvn {' '.join(args)} failed:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}")


def _build(home: Path) -> None:
    print(f"spark: building elastream's Spark plugin and fetching Spark's Kafka connector into {home.parent} "
          "(first use only)", file=sys.stderr, flush=True)
    build = home / "plugin-build"
    shutil.copytree(HERE / "plugin", build, ignore=shutil.ignore_patterns("target"))
    _mvn("package", "-DskipTests", cwd=build)  # tests/spark/test_plugin.py runs the Java unit tests
    (home / "plugin").mkdir()
    shutil.copy(build / "target" / PLUGIN_JAR, home / "plugin" / PLUGIN_JAR)
    shutil.rmtree(build)
    _mvn("-f", str(HERE / "maven" / "kafka-connector" / "pom.xml"), "dependency:copy-dependencies",
         f"-DoutputDirectory={home / 'kafka'}", "-DincludeScope=runtime",
         f"-DincludeArtifactIds={','.join(KAFKA_ARTIFACTS)}")


if __name__ == "__main__":
    print(jars_dir() if sys.argv[1:] == ["--dir"] else ",".join(str(p) for p in spark_jars()))
