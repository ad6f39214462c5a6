"""The Dockerfile interpreter.

`plan()` is pure: it reads the Dockerfile and the files its COPYs take, and computes every step's cache key and
the image config (Env, Entrypoint, Cmd, WorkingDir, User, ...) with Docker's semantics. `Builder.build()`
then runs the steps that are not cached yet, each on top of the snapshots of the steps before it, runs the
image's smoke checks, and writes the docker-archive.

Instructions: FROM (debian:bookworm-slim, scratch), ARG (with defaults), ENV, LABEL, RUN (shell and exec
form), COPY (files and directories from the context, --chown, octal --chmod, .dockerignore), WORKDIR, USER,
EXPOSE, ENTRYPOINT, CMD. Anything else is refused by `dockerfile.parse()` or here, with the file and line.
"""
from __future__ import annotations

import json
import os
import platform
import posixpath
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import archive, rootfs, wheels
from .cache import Store, chain, remove_tree
from .context import ContextError, DockerIgnore, Source, collect, digest
from .dockerfile import DockerfileError, Instruction, expand, from_image, pairs, parse, words

Log = Callable[[str], None]

# bump when the way steps are executed or images are written changes what an image contains
TOOL_VERSION = "elastream build-images 1"


class BuildError(RuntimeError):
    pass


@dataclass(frozen=True)
class BaseImage:
    name: str
    recipe: str                                   # what defines its content: part of the cache key
    env: tuple[tuple[str, str], ...]
    cmd: tuple[str, ...] | None
    make: Callable[[Path, Log], None] | None      # fills an empty directory; None: no layer (scratch)


BASES = {
    "debian:bookworm-slim": BaseImage("debian:bookworm-slim", rootfs.DEBIAN_SLIM_RECIPE,
                                      (("PATH", rootfs.DEFAULT_PATH),), ("bash",), rootfs.debian_slim),
    "scratch": BaseImage("scratch", "scratch", (("PATH", rootfs.DEFAULT_PATH),), None, None),
}


@dataclass
class ImageConfig:
    env: dict[str, str] = field(default_factory=dict)
    entrypoint: list[str] | None = None
    cmd: list[str] | None = None
    workdir: str = "/"
    user: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    exposed: list[str] = field(default_factory=list)
    cmd_from_base: bool = False

    def docker(self) -> dict:
        """The `config` object of the image config JSON."""
        d: dict = {"Env": [f"{k}={v}" for k, v in self.env.items()], "WorkingDir": self.workdir}
        if self.entrypoint is not None:
            d["Entrypoint"] = self.entrypoint
        if self.cmd is not None:
            d["Cmd"] = self.cmd
        if self.user:
            d["User"] = self.user
        if self.labels:
            d["Labels"] = dict(self.labels)
        if self.exposed:
            d["ExposedPorts"] = {p: {} for p in self.exposed}
        return d


@dataclass
class Step:
    """A step that changes the file system (FROM with a layer, RUN, COPY, WORKDIR)."""
    instruction: Instruction
    key: str
    kind: str                                     # "base", "run", "copy", "workdir"
    user: str = ""
    workdir: str = "/"
    argv: list[str] | None = None                 # RUN
    env: dict[str, str] | None = None             # RUN: ARG values and ENV
    sources: list[Source] | None = None           # COPY
    dest: str = ""                                # COPY: absolute path
    dest_is_dir: bool = False
    chown: str | None = None
    chmod: int | None = None

    @property
    def where(self) -> str:
        return f"{self.instruction.source}:{self.instruction.line}"


@dataclass
class Plan:
    name: str
    ref: str
    dockerfile: Path
    context: Path
    base: BaseImage
    steps: list[Step]
    config: ImageConfig
    history: list[str]
    key: str                                      # covers every step, the config and the ref


def plan(name: str, ref: str, dockerfile: Path, context: Path, source: str | None = None,
         contexts: dict[str, Path] | None = None) -> Plan:
    """Parse `dockerfile` and compute the steps, their cache keys and the image config (no side effects).

    `contexts`: named build contexts, as `docker build --build-context NAME=DIR` gives them to BuildKit; a
    `COPY --from=NAME` copies from one of them (its files count in the step's key like any COPY's)."""
    source = source or str(dockerfile)
    contexts = dict(contexts or {})
    instructions = parse(dockerfile.read_text(), source)
    ignore = DockerIgnore.for_build(context, dockerfile)
    key = chain(TOOL_VERSION)
    steps: list[Step] = []
    history: list[str] = []
    args: dict[str, str | None] = {}
    config = ImageConfig()
    base: BaseImage | None = None
    for ins in instructions:
        history.append(ins.text)
        if ins.keyword == "FROM":
            image = from_image(ins)
            if image not in BASES:
                raise ins.error(f"base image {image!r} is not supported; scripts/build-images makes "
                                f"{' and '.join(BASES)}")
            base = BASES[image]
            key = chain(key, ins.text, base.recipe)
            config = ImageConfig(env=dict(base.env), cmd=list(base.cmd) if base.cmd else None,
                                 cmd_from_base=base.cmd is not None)
            if base.make is not None:
                steps.append(Step(ins, key, "base"))
            continue
        key = chain(key, ins.text)
        variables = {**{k: v for k, v in args.items() if v is not None}, **config.env}
        kw = ins.keyword
        if kw == "ARG":
            for k, v in pairs(ins, variables):
                args[k] = v if v is not None else args.get(k)
        elif kw == "ENV":
            config.env.update(pairs(ins, variables))     # every pair sees the values before the instruction
        elif kw == "LABEL":
            config.labels.update(pairs(ins, variables))
        elif kw == "USER":
            value = words(ins, variables)
            if len(value) != 1:
                raise ins.error("expected USER NAME|UID[:GROUP|GID]")
            config.user = value[0]
        elif kw == "EXPOSE":
            for port in words(ins, variables):
                if not re.fullmatch(r"\d+(/(tcp|udp|sctp))?", port):
                    raise ins.error(f"{port!r}: expected PORT[/tcp|udp|sctp]")
                config.exposed.append(port if "/" in port else f"{port}/tcp")
        elif kw in ("ENTRYPOINT", "CMD"):
            if ins.exec_form is not None:
                value = list(ins.exec_form)
            else:
                value = ["/bin/sh", "-c", ins.args] if ins.args else None
            if kw == "ENTRYPOINT":
                config.entrypoint = value
                if config.cmd_from_base:                 # Docker: a new ENTRYPOINT drops the base's CMD
                    config.cmd = None
            else:
                config.cmd = value
            config.cmd_from_base = False
        elif kw == "WORKDIR":
            path = "".join(words(ins, variables, split=False)).strip()
            config.workdir = posixpath.normpath(posixpath.join(config.workdir, path))
            steps.append(Step(ins, key, "workdir", user=config.user, workdir=config.workdir))
        elif kw == "RUN":
            argv = list(ins.exec_form) if ins.exec_form is not None else ["/bin/sh", "-c", ins.args]
            steps.append(Step(ins, key, "run", user=config.user, workdir=config.workdir, argv=argv,
                              env=dict(variables)))
        elif kw == "COPY":
            step = _copy_step(ins, key, variables, config, context, ignore, contexts)
            key = step.key
            steps.append(step)
        else:                                            # parse() lets only SUPPORTED through
            raise ins.error("not implemented")
    assert base is not None
    image_key = chain(key, json.dumps(config.docker(), sort_keys=True), ref)
    return Plan(name, ref, dockerfile, context, base, steps, config, history, image_key)


def _copy_step(ins: Instruction, key: str, variables: dict[str, str], config: ImageConfig, context: Path,
               ignore: DockerIgnore, contexts: dict[str, Path]) -> Step:
    named = ins.flag("from")
    if named is not None:
        if named not in contexts:
            known = ", ".join(sorted(contexts)) or "none"
            raise ins.error(f"--from={named}: not a named build context of this image (it has: {known}); "
                            "multi-stage builds are not supported")
        context = contexts[named]
        ignore = DockerIgnore.for_build(context, context / "Dockerfile")  # the named context's own .dockerignore
    items = [expand(ins, variables, x) for x in ins.exec_form] if ins.exec_form is not None \
        else words(ins, variables)
    if len(items) < 2:
        raise ins.error("expected COPY SRC... DEST")
    names, dest = items[:-1], items[-1]
    try:
        sources = collect(context, names, ignore)
    except ContextError as e:
        raise ins.error(str(e)) from None
    dest_is_dir = dest.endswith("/") or dest in (".", "..") or dest.endswith("/.") or len(names) > 1
    chmod = ins.flag("chmod")
    if chmod is not None and not re.fullmatch(r"[0-7]{3,4}", chmod):
        raise ins.error(f"--chmod={chmod}: only octal modes are supported")
    chown = ins.flag("chown")
    return Step(ins, chain(key, digest(sources)), "copy", user=config.user, workdir=config.workdir,
                sources=sources, dest=posixpath.normpath(posixpath.join(config.workdir, dest)),
                dest_is_dir=dest_is_dir,
                chown="".join(words(ins, variables, chown, split=False)) if chown else None,
                chmod=int(chmod, 8) if chmod else None)


# -- building ------------------------------------------------------------------------------------------------

class CheckContext:
    """What an image's smoke checks get: its root file system (mounted read-write on a throwaway layer) and a
    way to run commands in it as the image would run them (its Env, User, WorkingDir)."""

    def __init__(self, root: Path, config: ImageConfig, log: Log, can_run: bool):
        self.root, self.config, self.log, self.can_run = root, config, log, can_run

    def path(self, inside: str) -> Path:
        return rootfs.resolve_in_root(self.root, inside)

    def run(self, argv: list[str], *, user: str | None = None, env: dict[str, str] | None = None,
            timeout: float = 600, expect: int | None = 0) -> str:
        if not self.can_run:
            raise BuildError("checks that run commands in the image need root")
        try:
            proc = rootfs.run(self.root, argv, env={**self.config.env, **(env or {})},
                              user=self.config.user if user is None else user, workdir=self.config.workdir,
                              timeout=timeout, capture=True)
        except subprocess.TimeoutExpired:
            raise BuildError(f"check {argv!r} did not finish in {timeout} s") from None
        if expect is not None and proc.returncode != expect:
            raise BuildError(f"check {' '.join(argv)!r} exited with {proc.returncode}, expected {expect}:\n"
                             f"{proc.stdout[-4000:]}")
        return proc.stdout


Check = Callable[[CheckContext], None]


class Builder:
    def __init__(self, store: Store, log: Log, *, no_cache: bool = False, recheck: bool = False):
        self.store, self.log, self.no_cache, self.recheck = store, log, no_cache, recheck
        self.built: set[str] = set()              # step keys built by this run (shared between images)
        self.is_root = os.geteuid() == 0

    def build(self, p: Plan, checks: list[Check] = (), wheel_dir: Callable[[], Path] | None = None,
              extra_ref: dict | None = None) -> Path:
        """Build (or reuse) image `p`; return its docker-archive."""
        tar = self.store.tar_path(p.name, p.key)
        ref = {"ref": p.ref, "key": p.key, "tar": str(tar), "steps": [s.key for s in p.steps], **(extra_ref or {})}
        if tar.is_file() and not self.no_cache:
            if self.recheck and all(self.store.has_step(s.key) for s in p.steps):
                self._check(p, [self.store.diff(s.key) for s in p.steps], list(checks))
            self.log(f"{p.name}: up to date, {tar.name}")
            self.store.write_ref(p.name, ref)
            return tar
        started = time.monotonic()
        layers: list[Path] = []
        for i, step in enumerate(p.steps, 1):
            label = f"{p.name} {i}/{len(p.steps)} {_short(step.instruction.text)}"
            cached = self.store.has_step(step.key) and (not self.no_cache or step.key in self.built)
            if cached:
                self.log(f"{label}: cached")
            else:
                t0 = time.monotonic()
                self.log(f"{label} ...")
                self._execute(p, step, layers, wheel_dir)
                self.built.add(step.key)
                self.log(f"{label}: done in {_seconds(time.monotonic() - t0)}")
            layers.append(self.store.diff(step.key))
        if not layers:
            raise BuildError(f"{p.dockerfile}: the image is empty (FROM scratch and nothing copied)")
        self._check(p, layers, list(checks))
        t0 = time.monotonic()
        self._export(p, layers, tar)
        self.log(f"{p.name}: wrote {tar.name} ({tar.stat().st_size / 1e6:.0f} MB) in "
                 f"{_seconds(time.monotonic() - t0)}; image built in {_seconds(time.monotonic() - started)}")
        self.store.write_ref(p.name, ref)
        return tar

    def _require_root(self, what: str) -> None:
        if not self.is_root:
            raise BuildError(f"{what} needs root (debootstrap, chroot and overlayfs mounts); run as root")

    def _execute(self, p: Plan, step: Step, layers: list[Path], wheel_dir: Callable[[], Path] | None) -> None:
        meta = {"image": p.name, "instruction": step.instruction.text, "at": step.where}
        with self.store.new_step(step.key, meta) as tmp:
            diff = tmp / "diff"
            if step.kind == "base":
                self._require_root(f"FROM {p.base.name}")
                p.base.make(diff, self.log)
            elif not layers:
                if step.kind == "run":
                    raise BuildError(f"{step.where}: RUN needs a base image with a shell; FROM scratch has none")
                self._apply(step, diff, wheel_dir)
            else:
                self._require_root(f"{step.where}: {step.instruction.keyword}")
                with rootfs.Overlay(layers, tmp / "root", upper=diff, work=tmp / "work") as root:
                    self._apply(step, root, wheel_dir)

    def _apply(self, step: Step, root: Path, wheel_dir: Callable[[], Path] | None) -> None:
        try:
            if step.kind == "workdir":
                uid, gid, _ = rootfs.lookup_user(root, step.user)
                _mkdirs(root, step.workdir, uid, gid)
            elif step.kind == "copy":
                _copy(root, step)
            elif step.kind == "run":
                env, binds = dict(step.env or {}), []
                if wheel_dir is not None:
                    binds.append((wheel_dir(), wheels.INSIDE))
                    env = {**wheels.PIP_ENV, **env}
                assert step.argv is not None
                proc = rootfs.run(root, step.argv, env=env, user=step.user, workdir=step.workdir, binds=binds)
                if proc.returncode != 0:
                    raise BuildError(f"{step.where}: RUN failed (exit {proc.returncode}); see the output above")
        except rootfs.RootfsError as e:
            raise BuildError(f"{step.where}: {e}") from None

    def _check(self, p: Plan, layers: list[Path], checks: list[Check]) -> None:
        if not checks:
            return
        t0 = time.monotonic()
        if not self.is_root:                # a scratch image with one layer: look at it, run nothing in it
            if len(layers) != 1:
                self._require_root(f"{p.name}: checking a stack of layers")
            for check in checks:
                check(CheckContext(layers[0], p.config, self.log, can_run=False))
        else:
            tmp = self.store.tmp_path(self.store.root, f"check-{p.name}")
            remove_tree(tmp)
            (tmp / "upper").mkdir(parents=True)
            try:
                with rootfs.Overlay(layers, tmp / "root", upper=tmp / "upper", work=tmp / "work") as root:
                    for check in checks:
                        check(CheckContext(root, p.config, self.log, can_run=True))
            finally:
                remove_tree(tmp)
        self.log(f"{p.name}: smoke checks passed in {_seconds(time.monotonic() - t0)}")

    def _export(self, p: Plan, layers: list[Path], tar: Path) -> None:
        tmp = self.store.tmp_path(self.store.root, f"export-{p.name}")
        remove_tree(tmp)
        tmp.mkdir(parents=True)
        try:
            layer = tmp / "layer.tar"
            if len(layers) == 1:
                diff_id = archive.write_layer(layers[0], layer)
            else:
                self._require_root("stacking layers")
                with rootfs.Overlay(layers, tmp / "root") as root:
                    diff_id = archive.write_layer(root, layer)
            config = archive.image_config(p.config.docker(), diff_id, p.history, architecture=architecture())
            archive.write_docker_archive(tar, layer, diff_id, config, [p.ref])
        finally:
            remove_tree(tmp)


def architecture() -> str:
    machine = platform.machine()
    return {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm"}.get(machine, machine)


# -- COPY and WORKDIR in a root file system --------------------------------------------------------------------

def _mkdirs(root: Path, path: str, uid: int, gid: int, mode: int = 0o755) -> Path:
    """mkdir -p `path` inside `root`: missing parents owned by root, the last one by uid:gid."""
    parts = [x for x in path.split("/") if x]
    current = "/"
    host = root
    for i, part in enumerate(parts):
        current = posixpath.join(current, part)
        host = rootfs.resolve_in_root(root, current)
        if not os.path.lexists(host):
            host.mkdir(mode=mode)
            os.chmod(host, mode)
            if i == len(parts) - 1:
                _chown(host, uid, gid)
        elif not host.is_dir():
            raise BuildError(f"{current} exists in the image and is not a directory")
    return host


def _chown(path: Path, uid: int, gid: int) -> None:
    if os.geteuid() == 0:                 # otherwise the layer records root as the owner (archive.write_layer)
        os.lchown(path, uid, gid)


def _copy(root: Path, step: Step) -> None:
    uid, gid = 0, 0
    if step.chown:
        if os.geteuid() != 0:
            raise BuildError(f"{step.where}: COPY --chown needs root")
        uid, gid, _ = rootfs.lookup_user(root, step.chown)
    assert step.sources is not None
    for source in step.sources:
        if source.is_dir:
            _mkdirs(root, step.dest, uid, gid)
            for entry in source.entries:
                if entry.rel:
                    _put(root, posixpath.join(step.dest, entry.rel), entry, uid, gid, step.chmod)
        else:
            into_dir = step.dest_is_dir or rootfs.resolve_in_root(root, step.dest).is_dir()
            target = posixpath.join(step.dest, posixpath.basename(source.name.rstrip("/"))) if into_dir \
                else step.dest
            _mkdirs(root, posixpath.dirname(target), 0, 0)
            _put(root, target, source.entries[0], uid, gid, step.chmod)


def _put(root: Path, target: str, entry, uid: int, gid: int, chmod: int | None) -> None:
    host = rootfs.resolve_in_root(root, posixpath.dirname(target)) / posixpath.basename(target)
    mode = chmod if chmod is not None else entry.mode
    if entry.kind == "dir":
        if os.path.lexists(host) and not host.is_dir():
            host.unlink()
        if not host.exists():
            host.mkdir()
        os.chmod(host, mode)
        _chown(host, uid, gid)
        return
    if host.is_dir() and not host.is_symlink():
        raise BuildError(f"COPY: {target} is a directory in the image")
    if os.path.lexists(host):
        host.unlink()
    if entry.kind == "link":
        os.symlink(os.readlink(entry.path), host)
        _chown(host, uid, gid)
        return
    shutil.copyfile(entry.path, host)
    os.chmod(host, mode)
    _chown(host, uid, gid)
    st = os.stat(entry.path)
    os.utime(host, ns=(st.st_atime_ns, st.st_mtime_ns))


def _short(text: str, n: int = 90) -> str:
    return text if len(text) <= n else text[:n - 3] + "..."


def _seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 120 else f"{int(s // 60)} min {int(s % 60)} s"
