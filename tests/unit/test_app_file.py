"""A user's application file (spark.application.file): loaded with its arguments, refused with a clear message
when it is not one, and — for real, on a local Spark — run by the runner with a UDF on the executor side."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from spark_apps.apps import from_file
from spark_apps.cluster import free_port
from spark_apps.runner import build_parser, run_directory

SCALE_APP = textwrap.dedent('''
    from pyspark.sql import functions as F

    OUTPUT_MODE = "append"


    def build(df, args):
        factor = int(args[0])
        scale = F.udf(lambda seq: seq * factor, "long")  # runs in the executors' Python workers
        return df.select("seq", scale("seq").alias("scaled"))
''')


def write(tmp_path: Path, text: str, name: str = "app.py") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_file_defines_build_and_output_mode(tmp_path):
    app = from_file(write(tmp_path, SCALE_APP, "scale.py"), ["3"])
    assert (app.name, app.output_mode, app.kind) == ("scale", "append", "custom")


@pytest.mark.parametrize("text,words", [
    ("x = 1\n", "defines no build(df, args) function"),
    ("def build(df, args):\n    return df\nOUTPUT_MODE = 'sometimes'\n", "OUTPUT_MODE must be one of"),
])
def test_not_an_application_is_refused_with_a_message(tmp_path, text, words):
    with pytest.raises(SystemExit, match=words.replace("(", r"\(").replace(")", r"\)")):
        from_file(write(tmp_path, text), [])


def test_missing_file_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="no such file"):
        from_file(str(tmp_path / "nope.py"), [])


def test_runner_takes_a_file_or_a_builtin_not_both():
    args = build_parser().parse_args(["--app-file", "/a.py", "--app-arg", "3", "--app-arg=-x",
                                      "--checkpoint", "c", "--sink", "s"])
    assert (args.app, args.app_file, args.app_arg) == (None, "/a.py", ["3", "-x"])
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--app", "identity", "--app-file", "/a.py", "--checkpoint", "c", "--sink", "s"])


def test_the_run_file_stays_on_the_volume_when_the_checkpoint_is_in_an_object_store():
    assert run_directory("/var/lib/elastream/wc/checkpoint", "/var/lib/elastream/wc/sink") == \
        "/var/lib/elastream/wc/checkpoint"
    assert run_directory("s3a://bucket/wc/checkpoint", "/var/lib/elastream/wc/sink") == "/var/lib/elastream/wc/run"


@pytest.mark.slow
def test_the_runner_runs_a_file_application_on_local_spark(tmp_path):
    token = tmp_path / "token"
    token.write_text("t")
    sink = tmp_path / "sink"
    cmd = [sys.executable, "-m", "spark_apps.runner", "--app-file", write(tmp_path, SCALE_APP, "scale.py"),
           "--app-arg", "3", "--master", "local[1]", "--checkpoint", str(tmp_path / "ck"), "--sink", str(sink),
           "--profile", "constant", "--rate", "50", "--duration", "3s", "--stop-when-done", "--trigger", "1s",
           "--metrics-port", str(free_port()), "--control-port", str(free_port()), "--token-file", str(token),
           "--bind-address", "127.0.0.1"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for part in sink.glob("batch-*/part-*") for line in part.read_text().splitlines()]
    assert sorted(r["seq"] for r in rows) == list(range(150))
    assert all(r["scaled"] == 3 * r["seq"] for r in rows)
