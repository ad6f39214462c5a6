"""Root file systems on the host, without a container engine: the part of the builder that needs root.

* `debian_slim()` makes the `debian:bookworm-slim` base: debootstrap --variant=minbase plus the configuration
  Docker's official slim image carries (no docs/man/locales, apt cleans up after itself, services are not
  started by package installs).
* `Overlay` stacks step snapshots with overlayfs, like Docker's overlay2 driver: the lower layers stay
  untouched and the changes of a step land in its own upper directory.
* `run()` runs a command in a root file system the way `docker build` runs RUN: its own PID namespace (no
  process outlives the step) with a fresh /proc, a minimal /dev on a tmpfs, the host's /etc/resolv.conf,
  chroot, the instruction's user and working directory, and only the environment the image defines
  (`env -i` semantics: nothing of the host's SSL_CERT_FILE, PIP_*, ... leaks in).

Every mount is made in a private mount namespace (`enter_private_mount_namespace()`) and undone in `finally`
blocks, so neither an error nor a kill leaves a mount behind on the host.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterable

Log = Callable[[str], None]

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
UNSHARE = "/usr/bin/unshare"

DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
DEBIAN_SECURITY = "http://deb.debian.org/debian-security"
# what defines the base's content besides the debian packages themselves: part of its cache key
DEBIAN_SLIM_RECIPE = f"debootstrap --variant=minbase {DEBIAN_SUITE} {DEBIAN_MIRROR}; docker-slim config v2"

_CLONE_NEWNS = 0x00020000
_MS_REC, _MS_PRIVATE = 0x4000, 1 << 18
_PR_SET_PDEATHSIG = 1


class RootfsError(RuntimeError):
    pass


# -- mounts ----------------------------------------------------------------------------------------------------

def enter_private_mount_namespace() -> None:
    """Move this process into its own mount namespace with private propagation: its mounts are invisible to
    the host and vanish with it, whatever happens."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_CLONE_NEWNS) != 0:
        raise RootfsError(f"unshare(CLONE_NEWNS): {os.strerror(ctypes.get_errno())}")
    if libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        raise RootfsError(f"mount --make-rprivate /: {os.strerror(ctypes.get_errno())}")


class Mounts:
    """Mounts made in a `with` block, undone in reverse order when it ends (even on error)."""

    def __init__(self) -> None:
        self.targets: list[Path] = []
        self.created: list[Path] = []     # mount points we created, removed after unmounting

    def __enter__(self) -> "Mounts":
        return self

    def __exit__(self, *exc) -> None:
        self.unmount_all()

    def mount(self, target: Path, *args: str) -> None:
        _check(["mount", *args, str(target)], f"mount {target}")
        self.targets.append(target)

    def mountpoint(self, root: Path, inside: str, *, directory: bool) -> Path:
        """The host path of mount point `inside` the root, created if missing (and removed afterwards)."""
        target = resolve_in_root(root, inside)
        if not os.path.lexists(target):
            resolve_in_root(root, os.path.dirname(inside)).mkdir(parents=True, exist_ok=True)
            if directory:
                target.mkdir()
            else:
                target.touch()
            self.created.append(target)
        elif target.is_symlink() or target.is_dir() != directory:
            raise RootfsError(f"cannot mount on {inside} in {root}: not a {'directory' if directory else 'file'}")
        return target

    def unmount_all(self) -> None:
        errors = []
        while self.targets:
            target = self.targets.pop()
            if subprocess.run(["umount", str(target)], stderr=subprocess.DEVNULL).returncode != 0:
                if subprocess.run(["umount", "--lazy", str(target)]).returncode != 0:
                    errors.append(str(target))
        while self.created:
            p = self.created.pop()
            try:
                p.rmdir() if p.is_dir() else p.unlink()
            except OSError:
                pass
        if errors:
            raise RootfsError(f"could not unmount {', '.join(errors)}")


class Overlay(Mounts):
    """`lowers` (bottom first) stacked read-only at `target`; with `upper`/`work` the changes go to `upper`.
    Without them the view is read-only (overlayfs needs two lowers for that; one lower is bind-mounted)."""

    def __init__(self, lowers: list[Path], target: Path, upper: Path | None = None, work: Path | None = None):
        super().__init__()
        self.lowers, self.target, self.upper, self.work = lowers, target, upper, work

    def __enter__(self) -> Path:
        for p in self.lowers + [p for p in (self.upper, self.work) if p]:
            if any(c in str(p) for c in ":,"):
                raise RootfsError(f"overlayfs cannot use a path with ':' or ',': {p}")
        self.target.mkdir(parents=True, exist_ok=True)
        try:
            if self.upper is None and len(self.lowers) == 1:
                self.mount(self.target, "--bind", "-o", "ro", str(self.lowers[0]))
            else:
                opts = "lowerdir=" + ":".join(str(p) for p in reversed(self.lowers))
                if self.upper is not None:
                    assert self.work is not None
                    self.work.mkdir(parents=True, exist_ok=True)
                    opts += f",upperdir={self.upper},workdir={self.work}"
                self.mount(self.target, "-t", "overlay", "overlay", "-o", opts)
        except BaseException:
            self.unmount_all()
            raise
        return self.target


def resolve_in_root(root: Path, path: str) -> Path:
    """The host path of `path` inside `root`, following symbolic links as if `root` were / (an absolute
    link never leads out of the root file system)."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    current: list[str] = []
    hops = 0
    while parts:
        part = parts.pop(0)
        if part == "..":
            if current:
                current.pop()
            continue
        candidate = root.joinpath(*current, part)
        if candidate.is_symlink():
            hops += 1
            if hops > 40:
                raise RootfsError(f"too many levels of symbolic links in {path}")
            target = os.readlink(candidate)
            if target.startswith("/"):
                current = []
            parts = [p for p in target.split("/") if p not in ("", ".")] + parts
            continue
        current.append(part)
    return root.joinpath(*current)


# -- users -----------------------------------------------------------------------------------------------------

def lookup_user(root: Path, spec: str) -> tuple[int, int, str]:
    """(uid, gid, home) of a Dockerfile USER value (name or uid, optionally :group or :gid), looked up in the
    image's /etc/passwd and /etc/group."""
    if not spec:
        return 0, 0, "/root"
    user, _, group = spec.partition(":")
    passwd = _table(root, "/etc/passwd")
    entry = next((e for e in passwd if e[0] == user), None) if not user.isdigit() else \
        next((e for e in passwd if e[2] == user), None)
    if user.isdigit():
        uid = int(user)
    elif entry is None:
        raise RootfsError(f"USER {spec}: no user {user!r} in the image's /etc/passwd")
    else:
        uid = int(entry[2])
    gid = int(entry[3]) if entry else 0
    home = entry[5] if entry and len(entry) > 5 and entry[5] else "/"
    if group:
        if group.isdigit():
            gid = int(group)
        else:
            g = next((e for e in _table(root, "/etc/group") if e[0] == group), None)
            if g is None:
                raise RootfsError(f"USER {spec}: no group {group!r} in the image's /etc/group")
            gid = int(g[2])
    return uid, gid, home


def _table(root: Path, path: str) -> list[list[str]]:
    try:
        text = resolve_in_root(root, path).read_text()
    except OSError:
        return []
    return [line.split(":") for line in text.splitlines() if line and not line.startswith("#")]


# -- running commands in a root file system --------------------------------------------------------------------

_DEVICES = {"null": (1, 3), "zero": (1, 5), "full": (1, 7), "random": (1, 8), "urandom": (1, 9), "tty": (5, 0)}


def _dev(mounts: Mounts, root: Path) -> None:
    dev = mounts.mountpoint(root, "/dev", directory=True)
    mounts.mount(dev, "-t", "tmpfs", "-o", "mode=0755,nosuid,size=65536k", "tmpfs")
    for name, (major, minor) in _DEVICES.items():
        os.mknod(dev / name, stat.S_IFCHR | 0o666, os.makedev(major, minor))
        os.chmod(dev / name, 0o666)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, dev / name)
    for name in ("pts", "shm", "mqueue"):
        (dev / name).mkdir()
    os.chmod(dev / "shm", 0o1777)


def _die_with_parent() -> None:
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def run(root: Path, argv: list[str], *, env: dict[str, str], user: str = "", workdir: str = "/",
        binds: Iterable[tuple[Path, str]] = (), timeout: float | None = None,
        capture: bool = False, stdout=None) -> subprocess.CompletedProcess:
    """Run `argv` inside `root` like a Dockerfile RUN: new PID namespace and /proc, tmpfs /dev, the host's
    resolv.conf, read-only `binds` (host dir, path inside), the given user and working directory, and
    exactly `env` (plus PATH and HOME defaults)."""
    uid, gid, home = lookup_user(root, user)
    env = {"PATH": DEFAULT_PATH, "HOME": home, **env}
    if not resolve_in_root(root, workdir).is_dir():
        raise RootfsError(f"working directory {workdir} does not exist in the image")
    if not resolve_in_root(root, "/proc").is_dir():
        raise RootfsError("the image has no /proc directory: RUN needs a base image with a shell (not scratch)")
    with Mounts() as mounts:
        _dev(mounts, root)
        if Path("/etc/resolv.conf").exists():
            mounts.mount(mounts.mountpoint(root, "/etc/resolv.conf", directory=False),
                         "--bind", "-o", "ro", str(Path("/etc/resolv.conf").resolve()))
        for host_dir, inside in binds:
            mounts.mount(mounts.mountpoint(root, inside, directory=True), "--bind", "-o", "ro", str(host_dir))
        cmd = [UNSHARE, "--pid", "--fork", "--kill-child", "--mount-proc=/proc", f"--root={root}",
               f"--wd={workdir}", f"--setgid={gid}", f"--setuid={uid}", "--", *argv]
        return subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, timeout=timeout,
                              stdout=subprocess.PIPE if capture else (stdout or sys.stderr),
                              stderr=subprocess.STDOUT if capture else sys.stderr,
                              text=capture, preexec_fn=_die_with_parent)


# -- the debian:bookworm-slim base -----------------------------------------------------------------------------

SLIM_DPKG_EXCLUDES = """\
# debian:bookworm-slim as built by scripts/build-images (like Docker's official slim image): files that
# containers do not need are not installed; this keeps later package installs from adding them.
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/overrides/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/man/*
"""

APT_CONFIG = {
    # apt-get clean after every install/update: package caches would only bloat the image
    "docker-clean": 'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb '
                    '/var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };\n'
                    'APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb '
                    '/var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };\n'
                    'Dir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n',
    "docker-gzip-indexes": 'Acquire::GzipIndexes "true";\n',
    "docker-no-languages": 'Acquire::Languages "none";\n',
    "docker-autoremove-suggests": 'Apt::AutoRemove::SuggestsImportant "false";\n',
}

POLICY_RC_D = """\
#!/bin/sh
# Package installs in an image build must not start services (there is no init; a daemon would outlive
# the build step). Exit 101 = "action forbidden" for invoke-rc.d.
exit 101
"""

DEBIAN_SOURCES = f"""\
Types: deb
URIs: {DEBIAN_MIRROR}
Suites: {DEBIAN_SUITE} {DEBIAN_SUITE}-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: {DEBIAN_SECURITY}
Suites: {DEBIAN_SUITE}-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""

SLIM_REMOVE = ("usr/share/groff", "usr/share/info", "usr/share/linda", "usr/share/lintian/overrides",
               "usr/share/locale", "usr/share/man")


def ensure_debootstrap(log: Log) -> None:
    if shutil.which("debootstrap"):
        return
    log("debootstrap is missing: apt-get install debootstrap")
    _check(["apt-get", "install", "-y", "-q", "--no-install-recommends", "debootstrap"], "apt-get install debootstrap",
           env={**_host_env(), "DEBIAN_FRONTEND": "noninteractive"})


def debian_slim(target: Path, log: Log) -> None:
    """Make debian:bookworm-slim in the empty directory `target`."""
    ensure_debootstrap(log)
    log(f"debootstrap --variant=minbase {DEBIAN_SUITE} {DEBIAN_MIRROR} (about 1-2 minutes)")
    _check(["debootstrap", "--variant=minbase", DEBIAN_SUITE, str(target), DEBIAN_MIRROR], "debootstrap",
           env=_host_env(), stdout=sys.stderr)
    _slim(target)


def _slim(root: Path) -> None:
    (root / "etc/dpkg/dpkg.cfg.d/docker").write_text(SLIM_DPKG_EXCLUDES)
    (root / "etc/dpkg/dpkg.cfg.d/docker-apt-speedup").write_text("force-unsafe-io\n")
    for name, text in APT_CONFIG.items():
        (root / "etc/apt/apt.conf.d" / name).write_text(text)
    policy = root / "usr/sbin/policy-rc.d"
    policy.write_text(POLICY_RC_D)
    policy.chmod(0o755)
    (root / "etc/apt/sources.list.d/debian.sources").write_text(DEBIAN_SOURCES)
    (root / "etc/apt/sources.list").unlink(missing_ok=True)
    # what the dpkg excludes would have kept out, and what only the bootstrap needed
    doc = root / "usr/share/doc"
    for pkg in doc.iterdir() if doc.is_dir() else ():
        for p in pkg.iterdir() if pkg.is_dir() and not pkg.is_symlink() else ():
            if p.name != "copyright":
                _remove(p)
    for rel in SLIM_REMOVE:
        for p in (root / rel).iterdir() if (root / rel).is_dir() else ():
            _remove(p)
    def clear(rel: str, keep: tuple[str, ...] = (), pattern: str = "*") -> None:
        for p in (root / rel).glob(pattern) if (root / rel).is_dir() else ():
            if p.name not in keep:
                _remove(p)

    clear("var/lib/apt/lists", keep=("partial", "lock"))
    clear("var/cache/apt", pattern="*.bin")
    clear("var/cache/apt/archives", pattern="*.deb")
    clear("var/log", keep=("apt",))
    clear("var/log/apt")
    clear("tmp")
    clear("var/tmp")
    clear("dev")                                          # RUN steps and runtimes mount their own /dev
    # the runtime provides these three; debootstrap copied the host's
    for name, text in (("resolv.conf", ""), ("hostname", "localhost\n"),
                       ("hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")):
        path = root / "etc" / name
        path.unlink(missing_ok=True)
        path.write_text(text)
        path.chmod(0o644)


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p)
    else:
        p.unlink()


def _host_env() -> dict[str, str]:
    """A clean environment for host tools (debootstrap, apt-get): no SSL_*/PIP_* overrides of this machine."""
    env = {"PATH": DEFAULT_PATH, "HOME": "/root", "LC_ALL": "C"}
    for k in ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
        if k in os.environ:
            env[k] = os.environ[k]
    return env


def _check(cmd: list[str], what: str, env: dict[str, str] | None = None, stdout=None) -> None:
    proc = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=stdout or subprocess.PIPE,
                          stderr=subprocess.STDOUT if stdout is None else sys.stderr, text=True)
    if proc.returncode != 0:
        detail = (proc.stdout or "").strip()[-2000:] if stdout is None else "see the output above"
        raise RootfsError(f"{what} failed (exit {proc.returncode}): {detail}")
