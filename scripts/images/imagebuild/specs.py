"""The project's images: where their Dockerfiles and contexts are, and the smoke checks a new build must pass
before its tar is written (a broken image fails the build instead of a pod)."""
from __future__ import annotations

import os
import shutil
import signal
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .builder import BuildError, Check, CheckContext
from .cache import Store, chain
from .context import file_sha256

REPO = Path(__file__).resolve().parents[3]
COREDNS_VERSION = "v1.15.0"


@dataclass
class Env:
    """What preparing a build context may use."""
    cache: Path                  # ${ELASTREAM_CACHE:-~/.cache/elastream}
    store: Store
    log: Callable[[str], None]
    coredns_bin: Path | None     # --coredns-bin


@dataclass(frozen=True)
class ImageSpec:
    name: str
    ref: str
    dockerfile: str                                   # relative to the repository
    context: str | Callable[[Env], Path]              # a directory of the repository, or made on the host
    wheels: bool = False                              # RUN steps get the project's wheel cache (pip offline)
    checks: tuple[Check, ...] = ()
    contexts: tuple[tuple[str, Callable[[Env], Path]], ...] = ()   # named build contexts (COPY --from=NAME)


# -- checks ------------------------------------------------------------------------------------------------------

SPARK_PY = r"""
import glob, os, sys, tempfile, zipfile
import pyspark, pyarrow, numpy
import elastream, elasticity, controllers, spark_apps.runner
assert pyspark.__version__ == "4.3.0", pyspark.__version__
home = os.environ["SPARK_HOME"]
assert os.path.samefile(home, os.path.dirname(pyspark.__file__)), home
assert os.access(os.path.join(home, "bin", "spark-submit"), os.X_OK)
backend = "org/apache/spark/scheduler/cluster/k8s/KubernetesExecutorBackend.class"
jars = glob.glob(os.path.join(home, "jars", "spark-kubernetes_*.jar"))
assert any(backend in zipfile.ZipFile(j).namelist() for j in jars), jars
assert os.getuid() == 185 and os.getgid() == 0, (os.getuid(), os.getgid())
assert os.environ["PYSPARK_PYTHON"] == sys.executable or os.path.samefile(os.environ["PYSPARK_PYTHON"], sys.executable)
for d in (os.getcwd(), os.path.expanduser("~"), tempfile.gettempdir()):
    with tempfile.NamedTemporaryFile(dir=d):
        pass
print(f"python {sys.version.split()[0]}, pyspark {pyspark.__version__}, pyarrow {pyarrow.__version__}, "
      f"user {os.getuid()}, cwd {os.getcwd()}")
"""

# an executor as Spark on Kubernetes starts it, with a driver that is not there: it must get as far as
# KubernetesExecutorBackend trying to reach the driver (classpath, java options, arguments all fine)
EXECUTOR_ENV = {
    "SPARK_DRIVER_URL": "spark://CoarseGrainedScheduler@127.0.0.1:1",
    "SPARK_EXECUTOR_ID": "1", "SPARK_EXECUTOR_CORES": "1", "SPARK_EXECUTOR_MEMORY": "256m",
    "SPARK_APPLICATION_ID": "spark-smoke-check", "SPARK_EXECUTOR_POD_IP": "127.0.0.1",
    "SPARK_RESOURCE_PROFILE_ID": "0", "SPARK_EXECUTOR_POD_NAME": "smoke-check-exec-1",
    "SPARK_JAVA_OPT_0": "-Dspark.driver.port=1", "SPARK_JAVA_OPT_1": "-Dspark.network.timeout=5s",
    "SPARK_LOCAL_IP": "127.0.0.1",      # the build host's name need not resolve in the image (pods get /etc/hosts)
}


def check_spark(ctx: CheckContext) -> None:
    jars = ctx.path("/opt/venv/lib/python3.11/site-packages/pyspark/jars")
    missing = [j for j in ("elastream-spark-plugin-0.1.0.jar", "spark-sql-kafka-0-10_2.13-4.2.0.jar")
               if not (jars / j).is_file()]
    if missing:
        raise BuildError(f"not on Spark's classpath in the image: {', '.join(missing)}")
    ctx.log("  elastream's Spark plugin and Spark's Kafka connector on Spark's classpath")
    out = ctx.run(["/opt/entrypoint.sh", "python3", "-c", SPARK_PY])
    ctx.log(f"  {out.strip().splitlines()[-1]}")
    out = ctx.run(["/opt/entrypoint.sh", "java", "-version"])
    ctx.log(f"  {out.strip().splitlines()[0]}")
    ctx.run(["pip", "check"])
    out = ctx.run(["/opt/entrypoint.sh", "executor"], env=EXECUTOR_ENV, expect=None, timeout=300)
    if "KubernetesExecutorBackend" not in out or "Failed to connect to /127.0.0.1:1" not in out:
        raise BuildError(f"the executor entrypoint did not start KubernetesExecutorBackend:\n{out[-4000:]}")
    ctx.log("  executor entrypoint: KubernetesExecutorBackend started and tried to reach the driver")


OPERATOR_PY = r"""
import os
import kopf, kubernetes, elastream, elasticity, spark_apps, storm_apps.nimbus
import controllers.operator_settings, controllers.policy, controllers.streamapp
assert os.getuid() == 10001, os.getuid()
compile(open("/app/operator/main.py").read(), "/app/operator/main.py", "exec")
print(f"operator modules import, user {os.getuid()}")
"""


def check_operator(ctx: CheckContext) -> None:
    ctx.log(f"  {ctx.run(['python3', '-c', OPERATOR_PY]).strip().splitlines()[-1]}")
    ctx.log(f"  {ctx.run(['kopf', '--version']).strip()}")
    ctx.run(["pip", "check"])


def check_prometheus(ctx: CheckContext) -> None:
    ctx.log(f"  {ctx.run(['/usr/bin/prometheus', '--version']).strip().splitlines()[0]}")
    ctx.run(["promtool", "check", "config", "/etc/prometheus/prometheus.yml"])
    ctx.run(["sh", "-c", 'test "$(id -u)" = 65534 && touch /prometheus/.probe && rm /prometheus/.probe'])


def static_elf(path: Path) -> bool:
    """True for an ELF executable without a program interpreter (statically linked)."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2:
            return False
        phoff, = struct.unpack_from("<Q", head, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            p_type, = struct.unpack("<I", f.read(4))
            if p_type == 3:                            # PT_INTERP
                return False
    return True


def _static_binary(ctx: CheckContext, inside: str) -> Path:
    path = ctx.path(inside)
    if not path.is_file() or not os.access(path, os.X_OK):
        raise BuildError(f"{inside} is missing or not executable")
    if not static_elf(path):
        raise BuildError(f"{inside} is not a static ELF executable (a scratch image has no libc)")
    return path


def check_pause(ctx: CheckContext) -> None:
    # static: it runs the same on the host; it must sleep until SIGTERM, then exit 0
    proc = subprocess.Popen([str(_static_binary(ctx, "/pause"))], env={})
    time.sleep(0.5)
    if proc.poll() is not None:
        raise BuildError(f"/pause exited on its own ({proc.returncode})")
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise BuildError("/pause ignored SIGTERM") from None
    if rc != 0:
        raise BuildError(f"/pause exited with {rc} on SIGTERM")


def check_coredns(ctx: CheckContext) -> None:
    out = subprocess.run([str(_static_binary(ctx, "/coredns")), "-version"], env={}, capture_output=True,
                         text=True, timeout=60).stdout
    if f"CoreDNS-{COREDNS_VERSION.lstrip('v')}" not in out:
        raise BuildError(f"/coredns -version: {out.strip()!r}, expected CoreDNS-{COREDNS_VERSION.lstrip('v')}")


STORM_PY = r"""
import os, sys
import elastream, elasticity, storm_apps.pod, storm_apps.topology
home = os.environ["STORM_HOME"]
for sub in ("lib", "lib-worker", "flux", "log4j2"):
    assert os.listdir(os.path.join(home, sub)), sub
assert os.path.isfile(os.path.join(home, "log4j2", "worker.xml"))
assert os.getuid() == 185 and os.getgid() == 0, (os.getuid(), os.getgid())
for d in ("/var/lib/storm", os.path.expanduser("~")):
    open(os.path.join(d, ".probe"), "w").close()
    os.remove(os.path.join(d, ".probe"))
print(f"python {sys.version.split()[0]}, storm home {home} ({len(os.listdir(os.path.join(home, 'lib')))} jars), "
      f"user {os.getuid()}")
"""

# the pods' own launcher starts a real daemon: ZooKeeper must come up and answer `srvr` (the classpath, the log
# configuration and the generated storm.yaml all work) before `timeout` stops it
STORM_ZOOKEEPER = r"""
set -e
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p /tmp/conf && printf 'storm.zookeeper.port: %s\n' "$port" > /tmp/conf/storm.yaml
STORM_CONF_DIR=/tmp/conf STORM_STATE_DIR=/tmp/zk python3 -m storm_apps.pod zookeeper > /tmp/zk.log 2>&1 &
zk=$!
for i in $(seq 1 60); do
  if python3 -c "import socket; s = socket.create_connection(('127.0.0.1', $port), 1); s.sendall(b'srvr'); print(s.recv(200).decode())" 2>/dev/null | grep -q 'Zookeeper version'; then
    echo "zookeeper answered srvr after ${i}s"; kill $zk; exit 0
  fi
  sleep 1
done
cat /tmp/zk.log; kill $zk; exit 1
"""


def check_storm(ctx: CheckContext) -> None:
    ctx.log(f"  {ctx.run(['python3', '-c', STORM_PY]).strip().splitlines()[-1]}")
    ctx.log(f"  {ctx.run(['java', '-version']).strip().splitlines()[0]}")
    ctx.log(f"  {ctx.run(['sh', '-c', STORM_ZOOKEEPER], timeout=180).strip().splitlines()[-1]}")


# -- contexts made on the host -----------------------------------------------------------------------------------

def pause_context(env: Env) -> Path:
    """scripts/images/pause built with the local Go toolchain (static, CGO_ENABLED=0), cached by source."""
    src = REPO / "scripts/images/pause"
    go = shutil.which("go") or "/usr/local/go/bin/go"
    version = subprocess.run([go, "version"], capture_output=True, text=True, check=True).stdout.strip()
    flags = ["-trimpath", "-buildvcs=false", "-ldflags=-s -w"]
    key = chain("pause", version, *flags, file_sha256(src / "main.go"), file_sha256(src / "go.mod"))[:16]
    out = env.store.build / f"pause-{key}"
    if (out / "pause").is_file():
        return out
    tmp = env.store.tmp_path(env.store.build, out.name)
    tmp.mkdir(parents=True, exist_ok=True)
    env.log(f"go build pause ({version})")
    go_env = {**os.environ, "CGO_ENABLED": "0", "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod"}
    proc = subprocess.run([go, "build", *flags, "-o", str(tmp / "pause"), "."],
                          cwd=src, env=go_env, capture_output=True, text=True)
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise BuildError(f"go build of {src} failed:\n{proc.stderr}")
    tmp.rename(out)
    return out


def coredns_context(env: Env) -> Path:
    """The directory holding the coredns binary that `scripts/test-cluster build` made (or --coredns-bin)."""
    default = env.cache / "bin" / f"coredns-{COREDNS_VERSION}" / "coredns"
    path = env.coredns_bin or default
    if env.coredns_bin is None and not (default.parent / ".complete").is_file():
        raise BuildError(f"no CoreDNS {COREDNS_VERSION} binary at {default}: `scripts/test-cluster build` makes it "
                         "(or pass --coredns-bin PATH)")
    if not path.is_file():
        raise BuildError(f"--coredns-bin {path}: no such file")
    if path.name == "coredns":
        return path.parent
    staged = env.store.build / f"coredns-{file_sha256(path)[:16]}"      # the Dockerfile COPYs "coredns"
    if not (staged / "coredns").is_file():
        tmp = env.store.tmp_path(env.store.build, staged.name)
        tmp.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, tmp / "coredns")
        tmp.rename(staged)
    return staged


def _host_directory(env: Env, argv: list[str], what: str) -> Path:
    """A directory a project module lays out on the host (cached under env.cache) and prints last: `argv` runs
    with this interpreter in the repository; BuildError says what could not be made."""
    proc = subprocess.run([sys.executable, *argv], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "ELASTREAM_CACHE": str(env.cache)})
    if proc.returncode != 0:
        raise BuildError(f"{' '.join(argv)} could not make {what}:\n{proc.stdout[-2000:]}{proc.stderr[-3000:]}")
    home = Path(proc.stdout.strip().splitlines()[-1])
    if not (home / ".complete").is_file():
        raise BuildError(f"{home} is not a complete {what}")
    return home


def storm_home_context(env: Env) -> Path:
    """${storm.home} as storm_apps/distribution.py lays it out from Maven Central (cached; the first call takes
    ~30-60 s with Maven), for the storm-runner image's named context `storm-home`."""
    return _host_directory(env, ["-c", "from storm_apps.distribution import storm_home; print(storm_home())"],
                           "${storm.home}")


def spark_jars_context(env: Env) -> Path:
    """elastream's Spark plugin and Spark's Kafka connector as spark_apps/jars.py builds and fetches them (cached; the
    first call takes about a minute with Maven), for the spark-runner image's named context `spark-jars`."""
    return _host_directory(env, ["-m", "spark_apps.jars", "--dir"], "spark-jars directory (the plugin and the connector)")


def kafka_home_context(env: Env) -> Path:
    """Kafka's classpath as kafka_broker/distribution.py resolves it from Maven Central (cached; the first call takes
    about a minute with Maven), for the kafka image's named context `kafka-home`."""
    return _host_directory(env, ["-m", "kafka_broker.distribution"], "Kafka home")


def check_kafka(ctx: CheckContext) -> None:
    out = ctx.run(["java", "-cp", "/opt/kafka/lib/*", "kafka.Kafka", "--version"])
    ctx.log(f"  Kafka {out.strip().splitlines()[-1]}")
    ctx.run(["java", "-cp", "/opt/kafka/lib/*", "org.apache.kafka.tools.TopicCommand", "--version"])
    ctx.run(["sh", "-c", 'test "$(id -u)" = 1000 && test -r /opt/kafka/start.sh && touch /var/lib/kafka/.probe'])


IMAGES = {spec.name: spec for spec in (
    ImageSpec("pause", "localhost/elastream/pause:1", "scripts/images/pause/Dockerfile", pause_context,
              checks=(check_pause,)),
    ImageSpec("coredns", f"localhost/elastream/coredns:{COREDNS_VERSION}", "scripts/images/coredns.Dockerfile",
              coredns_context, checks=(check_coredns,)),
    ImageSpec("prometheus", "localhost/elastream/prometheus:1", "scripts/images/prometheus.Dockerfile",
              "scripts/images", checks=(check_prometheus,)),
    ImageSpec("operator", "ghcr.io/elastream/operator:0.1.0", "operator/Dockerfile", ".", wheels=True,
              checks=(check_operator,)),
    ImageSpec("spark-runner", "ghcr.io/elastream/spark-runner:0.1.0", "spark_apps/Dockerfile", ".", wheels=True,
              checks=(check_spark,), contexts=(("spark-jars", spark_jars_context),)),
    ImageSpec("storm-runner", "ghcr.io/elastream/storm-runner:0.1.0", "storm_apps/Dockerfile", ".", wheels=True,
              checks=(check_storm,), contexts=(("storm-home", storm_home_context),)),
    ImageSpec("kafka", "localhost/elastream/kafka:4.1.1", "kafka_broker/image/Dockerfile", "kafka_broker/image",
              checks=(check_kafka,), contexts=(("kafka-home", kafka_home_context),)),
)}
