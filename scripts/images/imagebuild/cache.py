"""The image cache: step snapshots keyed like Docker's build cache, and the image tars.

Layout under <cache>/images/ (the default <cache> is ${ELASTREAM_CACHE:-~/.cache/elastream}):

  steps/<key>/diff/        what one file-system step (FROM, RUN, COPY, WORKDIR) changed: an overlayfs upper
  steps/<key>/meta.json    directory, stacked on the steps before it like Docker's overlay2 layers
  <name>-<key>.tar         a finished image (docker-archive); <key> covers every step and the image config
  refs/<name>.json         the steps and tar an image name was last built from
  build/<name>-<key>/      build inputs made on the host (the pause binary)
  .lock                    one build at a time per cache directory

A step key is the hash of the parent step's key and the step's instruction (plus the content digest of what a
COPY takes, or the base image's recipe for FROM): a changed Dockerfile line or copied file invalidates that step
and every later one, never an earlier one. Everything is written under a .tmp-* name and renamed into place, so
an interrupted build leaves nothing half-made (leftover .tmp-* entries are removed by the next build). When an
image name is rebuilt from other steps, the steps and tar it no longer uses are deleted unless another image
uses them; steps no image uses (from a failed build) are kept for retries and dropped after a week.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Callable, Iterator

ORPHAN_TTL = 7 * 86400


def chain(parent: str, *parts: str) -> str:
    """The key of a step: its parent's key and what defines the step."""
    h = hashlib.sha256(parent.encode())
    for part in parts:
        h.update(b"\0" + part.encode())
    return h.hexdigest()[:32]


def remove_tree(path: Path) -> None:
    """rm -rf that also copes with the 000-mode directories overlayfs leaves in its work dir."""
    if not os.path.lexists(path):
        return
    if path.is_symlink() or not path.is_dir():
        path.unlink()
        return
    for mountpoint in sorted(mounts_under(path), reverse=True):
        # never delete through a mount (it would reach into the mounted layers): detach it first
        subprocess.run(["umount", "--lazy", mountpoint], stderr=subprocess.DEVNULL)
        if mountpoint in mounts_under(path):
            raise OSError(f"{mountpoint} is still mounted; not deleting {path}")

    def onerror(func, p, exc):
        try:
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700)
        except OSError:
            pass
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p, ignore_errors=True)
        elif os.path.lexists(p):
            os.unlink(p)

    shutil.rmtree(path, onerror=onerror)


class Store:
    def __init__(self, root: Path, log: Callable[[str], None] = lambda m: None):
        self.root = root
        self.steps = root / "steps"
        self.refs = root / "refs"
        self.build = root / "build"
        self.log = log

    # -- locking and leftovers --------------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "w") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self.log(f"waiting for another build using {self.root} ...")
                fcntl.flock(f, fcntl.LOCK_EX)
            try:
                self.remove_leftovers()
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def remove_leftovers(self) -> None:
        """Remove the .tmp-* entries of interrupted builds (only ever called under the lock)."""
        for d in (self.root, self.steps, self.refs, self.build):
            if d.is_dir():
                for p in d.glob(".tmp-*"):
                    remove_tree(p)

    def tmp_path(self, parent: Path, name: str) -> Path:
        parent.mkdir(parents=True, exist_ok=True)
        return parent / f".tmp-{name}-{os.getpid()}"

    # -- steps -------------------------------------------------------------------------------------------------

    def step_dir(self, key: str) -> Path:
        return self.steps / key

    def diff(self, key: str) -> Path:
        return self.steps / key / "diff"

    def has_step(self, key: str) -> bool:
        return (self.steps / key / "meta.json").is_file()

    def step_meta(self, key: str) -> dict:
        return json.loads((self.steps / key / "meta.json").read_text())

    @contextlib.contextmanager
    def new_step(self, key: str, meta: dict) -> Iterator[Path]:
        """A scratch directory for step `key`; its diff/ becomes the step's snapshot if the block succeeds."""
        tmp = self.tmp_path(self.steps, key)
        remove_tree(tmp)
        (tmp / "diff").mkdir(parents=True)
        started = time.monotonic()
        try:
            yield tmp
            for p in tmp.iterdir():
                if p.name != "diff":
                    remove_tree(p)
            meta = {**meta, "key": key, "seconds": round(time.monotonic() - started, 1),
                    "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            (tmp / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
            final = self.step_dir(key)
            if final.exists():                      # --no-cache rebuilt a step that was cached
                old = self.tmp_path(self.steps, key + "-old")
                final.rename(old)
                tmp.rename(final)
                remove_tree(old)
            else:
                tmp.rename(final)
        finally:
            remove_tree(tmp)

    # -- images ------------------------------------------------------------------------------------------------

    def tar_path(self, name: str, key: str) -> Path:
        return self.root / f"{name}-{key[:16]}.tar"

    def read_ref(self, name: str) -> dict | None:
        try:
            return json.loads((self.refs / f"{name}.json").read_text())
        except (OSError, ValueError):
            return None

    def write_ref(self, name: str, ref: dict) -> None:
        """Record what image `name` is built from now, and delete what only its previous build used."""
        old = self.read_ref(name)
        self.refs.mkdir(parents=True, exist_ok=True)
        tmp = self.tmp_path(self.refs, name)
        tmp.write_text(json.dumps(ref, indent=1) + "\n")
        tmp.rename(self.refs / f"{name}.json")
        if not old or old == ref:
            return
        others = [r for n, r in self.all_refs().items() if n != name] + [ref]
        used_steps = {k for r in others for k in r.get("steps", [])}
        used_paths = {p for r in others for p in (r.get("tar"), r.get("context")) if p}
        freed = 0
        for key in old.get("steps", []):
            if key not in used_steps and self.step_dir(key).exists():
                freed += _size(self.step_dir(key))
                remove_tree(self.step_dir(key))
        for path in (old.get("tar"), old.get("context")):
            if path and path not in used_paths and Path(path).is_relative_to(self.root) and os.path.lexists(path):
                freed += _size(Path(path))
                remove_tree(Path(path))
        if freed:
            self.log(f"{name}: dropped superseded cache entries ({freed / 1e6:.0f} MB)")

    def all_refs(self) -> dict[str, dict]:
        refs = {}
        if self.refs.is_dir():
            for p in self.refs.glob("*.json"):
                try:
                    refs[p.stem] = json.loads(p.read_text())
                except ValueError:
                    pass
        return refs

    def drop_orphans(self, now: float | None = None) -> None:
        """Delete steps no image uses that are older than ORPHAN_TTL (left by failed or abandoned builds)."""
        now = time.time() if now is None else now
        used = {k for r in self.all_refs().values() for k in r.get("steps", [])}
        if not self.steps.is_dir():
            return
        for d in self.steps.iterdir():
            if d.name.startswith(".tmp-") or d.name in used:
                continue
            if now - d.stat().st_mtime > ORPHAN_TTL:
                self.log(f"dropping unused cached step {d.name}")
                remove_tree(d)


def mounts_under(path: Path) -> list[str]:
    """Mount points at or below `path` (from /proc/self/mountinfo)."""
    prefix = os.path.realpath(path)
    found = []
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                point = line.split()[4].encode().decode("unicode_escape")
                if point == prefix or point.startswith(prefix + "/"):
                    found.append(point)
    except OSError:
        pass
    return found


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total
