"""scripts/build-images: the Dockerfile interpreter's pure parts (no root, no network, no debootstrap)."""
from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "images"))

from imagebuild import archive, wheels  # noqa: E402
from imagebuild.builder import Builder, BuildError, plan  # noqa: E402
from imagebuild.cache import Store  # noqa: E402
from imagebuild.context import DockerIgnore  # noqa: E402
from imagebuild.dockerfile import DockerfileError, pairs, parse, words  # noqa: E402
from imagebuild.specs import IMAGES, static_elf  # noqa: E402


def write(path: Path, text: str, mode: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mode is not None:
        path.chmod(mode)
    return path


def refused(text: str) -> str:
    with pytest.raises(DockerfileError) as e:
        parse(text, "Dockerfile")
    return str(e.value)


# -- parsing ---------------------------------------------------------------------------------------------------

def test_parse_joins_continuations_drops_comments_and_reads_exec_forms():
    ins = parse("# syntax=docker/dockerfile:1\n"
                "FROM debian:bookworm-slim\n"
                "# a comment\n"
                "RUN apt-get update \\\n"
                "    # a comment inside the continuation\n"
                " && apt-get install -y tini\n"
                "\n"
                'ENTRYPOINT ["/opt/entrypoint.sh", "x y"]\n'
                "copy --chown=185:0 a b /dst/\n")
    assert [i.keyword for i in ins] == ["FROM", "RUN", "ENTRYPOINT", "COPY"]
    assert [i.line for i in ins] == [2, 4, 8, 9]
    assert ins[1].text == "RUN apt-get update && apt-get install -y tini"
    assert ins[2].exec_form == ("/opt/entrypoint.sh", "x y")
    assert ins[3].flags == (("chown", "185:0"),) and ins[3].args == "a b /dst/"
    shell_test = parse("FROM scratch\nRUN [ -f /x ] || touch /x\n")[1]
    assert shell_test.exec_form is None and shell_test.text == "RUN [ -f /x ] || touch /x"


@pytest.mark.parametrize("text, message", [
    ("FROM debian:bookworm-slim\nADD https://x/y /y\n", "Dockerfile:2: ADD is not supported by scripts/build-images: use COPY"),
    ("FROM debian:bookworm-slim\nVOLUME /data\n", "Dockerfile:2: VOLUME is not supported"),
    ("FROM debian:bookworm-slim\nSHELL [\"/bin/bash\", \"-c\"]\n", "SHELL is not supported"),
    ("FROM debian:bookworm-slim\nHEALTHCHECK CMD true\n", "HEALTHCHECK is not supported"),
    ("FROM debian:bookworm-slim\nFROB x\n", "Dockerfile:2: unknown instruction 'FROB'"),
    ("FROM debian:bookworm-slim\nRUN --mount=type=cache,target=/root/.cache pip install x\n",
     "Dockerfile:2: RUN --mount is not supported by scripts/build-images: the builder provides"),
    ("FROM debian:bookworm-slim AS a\nRUN true\nFROM scratch\n", "Dockerfile:3: a second FROM: multi-stage builds"),
    ("FROM --platform=linux/arm64 debian:bookworm-slim\n", "FROM --platform is not supported by scripts/build-images: only the host's platform"),
    ("FROM debian:bookworm-slim\nRUN <<EOF\necho hi\nEOF\n", "Dockerfile:2: RUN: heredocs (<<EOF) are not supported"),
    ("FROM debian:bookworm-slim\nCMD ['single', 'quotes']\n", "Dockerfile:2: CMD: the exec form must be a JSON array"),
    ("ARG V=1\nFROM debian:bookworm-slim\n", "Dockerfile:1: ARG before FROM is not supported"),
    ("# escape=`\nFROM debian:bookworm-slim\n", "parser directive escape=` is not supported"),
    ("RUN true\n", "no FROM instruction"),
    ("FROM debian:bookworm-slim\nRUN true \\\n", "ends inside a line continuation"),
    ("FROM debian:bookworm-slim\nCOPY --chmod a b\n", "COPY --chmod needs a value"),
])
def test_unsupported_dockerfiles_are_refused_with_file_line_and_reason(text, message):
    assert message in refused(text)


def test_words_do_quotes_and_variable_substitution():
    ins = parse("FROM scratch\nENV X=1\n")[1]
    env = {"A": "a", "EMPTY": ""}
    assert words(ins, env, 'p=$A "q=${A}/x y" \'r=$A\' s\\ t') == ["p=a", "q=a/x y", "r=$A", "s t"]
    assert words(ins, env, "${B:-dflt} ${EMPTY:-e} ${EMPTY-u} ${A:+alt} ${B:+alt}x") == ["dflt", "e", "alt", "x"]
    assert words(ins, env, "\\$A $ 1") == ["$A", "$", "1"]
    with pytest.raises(DockerfileError, match=r"only \$\{VAR\}"):
        words(ins, env, "${A%%x}")


def test_env_pairs_see_the_values_before_the_instruction_and_accept_the_legacy_form():
    ins = parse('FROM scratch\nENV PATH=/opt/venv/bin:$PATH A="x y" B=$A\n')[1]
    assert pairs(ins, {"PATH": "/usr/bin", "A": "old"}) == [("PATH", "/opt/venv/bin:/usr/bin"), ("A", "x y"),
                                                            ("B", "old")]
    legacy = parse("FROM scratch\nENV GREETING hello  world\n")[1]
    assert pairs(legacy, {}) == [("GREETING", "hello  world")]


# -- planning: config and cache keys ----------------------------------------------------------------------------

def project(tmp_path: Path) -> tuple[Path, Path]:
    """A tiny project laid out like ours: dependencies from pyproject.toml first, then the code."""
    ctx = tmp_path / "ctx"
    write(ctx / "pyproject.toml", '[project]\nname = "p"\ndependencies = ["x==1"]\n')
    write(ctx / "pkg" / "__init__.py", "VALUE = 1\n")
    write(ctx / "pkg" / "run.sh", "#!/bin/sh\n", mode=0o755)
    write(ctx / "pkg" / "__pycache__" / "__init__.cpython-311.pyc", "junk")
    write(ctx / ".dockerignore", "**/__pycache__\n")
    dockerfile = write(ctx / "Dockerfile",
                       "FROM debian:bookworm-slim\n"
                       "ARG DEBIAN_FRONTEND=noninteractive\n"
                       "RUN apt-get update && apt-get install -y python3\n"
                       "ENV PATH=/opt/venv/bin:$PATH\n"
                       "COPY pyproject.toml /tmp/p/\n"
                       "RUN pip install -r /tmp/p/requirements.txt\n"
                       "WORKDIR app\n"
                       "COPY pkg ./pkg\n"
                       "RUN pip install --no-deps .\n"
                       "USER 185\n"
                       'ENTRYPOINT ["/opt/entrypoint.sh"]\n')
    return ctx, dockerfile


def keys(ctx: Path, dockerfile: Path) -> list[str]:
    return [s.key for s in plan("t", "example/t:1", dockerfile, ctx).steps]


def test_plan_computes_the_image_config_with_docker_semantics(tmp_path):
    ctx, dockerfile = project(tmp_path)
    p = plan("t", "example/t:1", dockerfile, ctx)
    assert [s.kind for s in p.steps] == ["base", "run", "copy", "run", "workdir", "copy", "run"]
    assert p.config.docker() == {
        "Env": ["PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
        "WorkingDir": "/app", "User": "185", "Entrypoint": ["/opt/entrypoint.sh"]}   # the base's CMD is dropped
    run = p.steps[1]
    assert run.argv == ["/bin/sh", "-c", "apt-get update && apt-get install -y python3"]
    assert run.env["DEBIAN_FRONTEND"] == "noninteractive" and run.workdir == "/" and run.user == ""
    copy = p.steps[5]
    assert copy.dest == "/app/pkg" and {e.rel for e in copy.sources[0].entries} == {"", "__init__.py", "run.sh"}
    assert len(p.history) == 11


def test_a_change_in_copied_code_invalidates_only_the_steps_from_that_copy_on(tmp_path):
    ctx, dockerfile = project(tmp_path)
    before = keys(ctx, dockerfile)
    assert keys(ctx, dockerfile) == before                       # deterministic
    os.utime(ctx / "pkg" / "__init__.py", (1, 1))                # times do not count
    write(ctx / "pkg" / "__pycache__" / "other.pyc", "ignored")  # .dockerignore'd files do not count
    assert keys(ctx, dockerfile) == before
    write(ctx / "pkg" / "__init__.py", "VALUE = 2\n")
    after = keys(ctx, dockerfile)
    assert after[:5] == before[:5]                               # debootstrap, apt, pip deps are reused
    assert all(a != b for a, b in zip(after[5:], before[5:]))
    (ctx / "pkg" / "run.sh").chmod(0o644)                       # permission bits count
    assert keys(ctx, dockerfile)[5] != after[5]


def test_a_change_in_dependencies_or_in_a_dockerfile_line_invalidates_from_there_on(tmp_path):
    ctx, dockerfile = project(tmp_path)
    before = keys(ctx, dockerfile)
    write(ctx / "pyproject.toml", '[project]\nname = "p"\ndependencies = ["x==2"]\n')
    after = keys(ctx, dockerfile)
    assert after[:2] == before[:2] and after[2] != before[2] and after[3] != before[3]
    dockerfile.write_text(dockerfile.read_text().replace("install -y python3", "install -y python3 tini"))
    changed = keys(ctx, dockerfile)
    assert changed[0] == after[0] and all(a != b for a, b in zip(changed[1:], after[1:]))


def test_plan_refuses_unsupported_bases_and_bad_copies(tmp_path):
    ctx = tmp_path
    write(ctx / "a.txt", "a")
    write(ctx / ".dockerignore", "secret\n")
    write(ctx / "secret", "s")
    for text, message in [
        ("FROM python:3.11-slim\n", "Dockerfile:1: FROM: base image 'python:3.11-slim' is not supported; "
                                    "scripts/build-images makes debian:bookworm-slim and scratch"),
        ("FROM scratch\nCOPY *.txt /\n", "Dockerfile:2: COPY: COPY *.txt: wildcards are not supported"),
        ("FROM scratch\nCOPY missing /\n", "Dockerfile:2: COPY: COPY missing: not found in the build context"),
        ("FROM scratch\nCOPY secret /\n", "(excluded by .dockerignore)"),
        ("FROM scratch\nCOPY ../x /\n", "outside the build context"),
        ("FROM scratch\nCOPY --chmod=u+x a.txt /\n", "only octal modes"),
        ("FROM scratch\nCOPY a.txt\n", "expected COPY SRC... DEST"),
        ("FROM scratch\nCOPY --from=build /x /x\n",
         "Dockerfile:2: COPY: --from=build: not a named build context of this image (it has: none); multi-stage"),
    ]:
        dockerfile = write(ctx / "Dockerfile", text)
        with pytest.raises(DockerfileError) as e:
            plan("t", "t:1", dockerfile, ctx, source="Dockerfile")
        assert message in str(e.value), (text, str(e.value))


def test_copy_from_a_named_build_context_counts_its_content_in_the_key(tmp_path):
    ctx, named = tmp_path / "ctx", tmp_path / "named"
    write(ctx / "a.txt", "a")
    write(named / "lib" / "x.jar", "x")
    dockerfile = write(ctx / "Dockerfile", "FROM scratch\nCOPY --from=home . /opt/home\nCOPY a.txt /\n")
    p = plan("t", "t:1", dockerfile, ctx, contexts={"home": named})
    copy = p.steps[0]
    assert copy.dest == "/opt/home" and {e.rel for e in copy.sources[0].entries} == {"", "lib", "lib/x.jar"}
    write(named / "lib" / "x.jar", "y")
    again = plan("t", "t:1", dockerfile, ctx, contexts={"home": named})
    assert again.steps[0].key != copy.key
    with pytest.raises(DockerfileError, match="it has: home"):
        plan("t", "t:1", write(ctx / "Dockerfile", "FROM scratch\nCOPY --from=other . /x\n"), ctx,
             contexts={"home": named})


def test_dockerignore_semantics():
    ignore = DockerIgnore(["# comment", "**/__pycache__", "*.egg-info", "out", "docs/*.md", "!docs/keep.md",
                           "/build"])
    assert ignore.excluded("__pycache__/x.pyc") and ignore.excluded("a/b/__pycache__/x.pyc")
    assert ignore.excluded("elastream.egg-info/PKG-INFO") and not ignore.excluded("a/elastream.egg-info")
    assert ignore.excluded("out/report.json") and not ignore.excluded("outer")
    assert ignore.excluded("docs/api.md") and not ignore.excluded("docs/keep.md")
    assert ignore.excluded("build/lib") and not ignore.excluded("src/build")


# -- the project's Dockerfiles ----------------------------------------------------------------------------------

def test_the_project_dockerfiles_are_in_the_supported_subset_and_install_dependencies_before_the_code(tmp_path):
    plans = {}
    named = write(tmp_path / "named" / "lib" / "storm-core.jar", "x").parent.parent  # stands in for ${storm.home}
    jars = write(tmp_path / "spark-jars" / "plugin" / "elastream-spark-plugin-0.1.0.jar", "x").parent.parent
    write(jars / "kafka" / "kafka-clients-3.9.2.jar", "x")  # stands in for spark_apps.jars' directory
    named_as = {"spark-jars": jars}
    for spec in IMAGES.values():
        if callable(spec.context):            # pause and coredns need a binary built first
            parse((ROOT / spec.dockerfile).read_text(), spec.dockerfile)
            continue
        plans[spec.name] = p = plan(spec.name, spec.ref, ROOT / spec.dockerfile, ROOT / spec.context,
                                    source=spec.dockerfile, contexts={n: named_as.get(n, named) for n, _ in spec.contexts})
        copies = [s for s in p.steps if s.kind == "copy"]
        for s in copies:                      # nothing copied into an image drags caches along
            assert not any("__pycache__" in e.rel or e.rel.endswith(".pyc") for src in s.sources
                           for e in src.entries)
        if spec.wheels:
            first_code = next(i for i, s in enumerate(p.steps)
                              if s.kind == "copy" and any(src.name == "elastream" for src in s.sources))
            deps = next(i for i, s in enumerate(p.steps) if "requirements.txt" in s.instruction.text)
            assert deps < first_code
            assert all(src.name == "pyproject.toml" for s in p.steps[:deps] if s.kind == "copy"
                       for src in s.sources)
    spark, operator = plans["spark-runner"], plans["operator"]
    shared = [a.key for a, b in zip(spark.steps, operator.steps) if a.key == b.key]
    # base, apt, venv, pyproject.toml, pip install of the dependencies: keep the two prefixes word for word
    assert len(shared) == 5, "spark_apps/Dockerfile and operator/Dockerfile no longer share their first steps"
    storm = plans["storm-runner"]
    shared = [a.key for a, b in zip(spark.steps, storm.steps) if a.key == b.key]
    # ... and the storm-runner image shares Spark's Java install too
    assert len(shared) == 6, "storm_apps/Dockerfile and spark_apps/Dockerfile no longer share their first steps"
    assert storm.config.user == "185" and storm.config.entrypoint == ["/usr/bin/tini", "-s", "--"]
    assert any(s.instruction.flag("from") == "storm-home" and s.dest == "/opt/storm" for s in storm.steps)
    assert spark.config.user == "185" and spark.config.entrypoint == ["/opt/entrypoint.sh"]
    assert any(s.instruction.flag("from") == "spark-jars" and s.dest.endswith("/pyspark/jars") for s in spark.steps)
    assert {"SPARK_HOME", "JAVA_HOME", "PYSPARK_PYTHON", "PATH"} <= set(spark.config.env)
    assert operator.config.user == "10001" and operator.config.entrypoint[:3] == ["kopf", "run", "/app/operator/main.py"]
    prometheus = plans["prometheus"].config
    assert prometheus.user == "65534:65534" and prometheus.entrypoint == ["/usr/bin/prometheus"]
    assert os.access(ROOT / "spark_apps" / "entrypoint.sh", os.X_OK)


def test_wheel_requirements_come_from_pyproject():
    reqs = wheels.requirements(ROOT / "pyproject.toml")
    assert "pyspark==4.3.0" in reqs and any(r.startswith("setuptools") for r in reqs) and "wheel" in reqs
    assert wheels.key(reqs) == wheels.key(list(reqs)) and wheels.key(reqs) != wheels.key(reqs + ["x"])


# -- archives and the build itself (FROM scratch needs no root) -------------------------------------------------

def test_docker_archive_layout_from_a_tiny_rootfs(tmp_path):
    rootfs = tmp_path / "rootfs"
    write(rootfs / "bin" / "hello", "#!/bin/sh\necho hi\n", mode=0o755)
    write(rootfs / "etc" / "motd", "hi\n")
    os.symlink("bin/hello", rootfs / "hello")
    layer = tmp_path / "layer.tar"
    diff_id = archive.write_layer(rootfs, layer)
    assert diff_id == hashlib.sha256(layer.read_bytes()).hexdigest()
    config = archive.image_config({"Env": ["PATH=/bin"], "Entrypoint": ["/bin/hello"]}, diff_id,
                                  ["FROM scratch", "COPY . /"], architecture="amd64")
    out = tmp_path / "image.tar"
    archive.write_docker_archive(out, layer, diff_id, config, ["localhost/elastream/hello:1"])
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")] == []

    manifest, cfg, names = archive.read_docker_archive(out)
    assert manifest == [{"Config": manifest[0]["Config"], "RepoTags": ["localhost/elastream/hello:1"],
                         "Layers": [f"{diff_id}/layer.tar"]}]
    assert set(names) == {diff_id, f"{diff_id}/layer.tar", manifest[0]["Config"], "manifest.json"}
    with tarfile.open(out) as t:
        config_bytes = t.extractfile(manifest[0]["Config"]).read()
        layer_bytes = t.extractfile(f"{diff_id}/layer.tar").read()
    assert manifest[0]["Config"] == hashlib.sha256(config_bytes).hexdigest() + ".json"
    assert hashlib.sha256(layer_bytes).hexdigest() == diff_id
    assert cfg["rootfs"] == {"type": "layers", "diff_ids": [f"sha256:{diff_id}"]}
    assert cfg["os"] == "linux" and cfg["config"]["Entrypoint"] == ["/bin/hello"]
    assert sum(1 for h in cfg["history"] if not h.get("empty_layer")) == 1        # one history entry per layer
    with tarfile.open(fileobj=io.BytesIO(layer_bytes)) as t:
        members = {m.name: m for m in t.getmembers()}
    assert {"./bin/hello", "./etc/motd", "./hello"} <= set(members)
    assert members["./bin/hello"].mode == 0o755 and members["./hello"].issym()
    assert members["./etc/motd"].uid == 0 or members["./etc/motd"].uid == os.getuid()


def test_scratch_image_build_is_cached_by_content_and_drops_superseded_tars(tmp_path):
    ctx = tmp_path / "ctx"
    write(ctx / "tool", "#!/bin/sh\n", mode=0o755)
    dockerfile = write(tmp_path / "Dockerfile", 'FROM scratch\nCOPY tool /tool\nENTRYPOINT ["/tool"]\n')
    store = Store(tmp_path / "cache" / "images")
    logs: list[str] = []
    builder = Builder(store, logs.append)
    with store.locked():
        first = builder.build(plan("tool", "localhost/t/tool:1", dockerfile, ctx))
        assert builder.build(plan("tool", "localhost/t/tool:1", dockerfile, ctx)) == first
        assert any("up to date" in line for line in logs)
        write(ctx / "tool", "#!/bin/sh\necho 2\n", mode=0o755)
        second = builder.build(plan("tool", "localhost/t/tool:1", dockerfile, ctx))
    assert second != first and second.is_file() and not first.exists()             # superseded tar dropped
    assert len(list(store.steps.iterdir())) == 1                                     # and its step
    manifest, cfg, names = archive.read_docker_archive(second)
    assert manifest[0]["RepoTags"] == ["localhost/t/tool:1"] and cfg["config"]["Entrypoint"] == ["/tool"]
    with tarfile.open(second) as t:
        layer = tarfile.open(fileobj=t.extractfile(manifest[0]["Layers"][0]))
        assert layer.extractfile("./tool").read() == b"#!/bin/sh\necho 2\n"
    assert json.loads((store.refs / "tool.json").read_text())["tar"] == str(second)


def test_a_failed_step_leaves_nothing_half_made(tmp_path):
    ctx = tmp_path / "ctx"
    write(ctx / "a", "a")
    store = Store(tmp_path / "images")
    with pytest.raises(RuntimeError):
        with store.new_step("k" * 32, {}) as tmp:
            (tmp / "diff" / "partial").write_text("x")
            raise RuntimeError("boom")
    assert not store.has_step("k" * 32) and list(store.steps.iterdir()) == []
    leftover = store.tmp_path(store.steps, "interrupted")
    leftover.mkdir()
    with store.locked():                                                              # the next build cleans up
        assert not leftover.exists()


def test_run_on_scratch_is_refused(tmp_path):
    dockerfile = write(tmp_path / "Dockerfile", "FROM scratch\nRUN true\n")
    store = Store(tmp_path / "images")
    with pytest.raises(BuildError, match="Dockerfile:2: RUN needs a base image with a shell"):
        Builder(store, lambda m: None).build(plan("t", "t:1", dockerfile, tmp_path, source="Dockerfile"))


def test_static_elf_detection(tmp_path):
    assert not static_elf(Path(sys.executable).resolve())          # dynamically linked
    assert not static_elf(write(tmp_path / "script", "#!/bin/sh\n"))
