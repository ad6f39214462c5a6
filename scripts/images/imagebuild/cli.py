"""scripts/build-images: build the project's container images without Docker and without a registry.

  scripts/build-images [--only NAME ...] [--cache DIR] [--coredns-bin PATH] [--host-pip PIP] [--no-cache] [--check]

Prints one line per image on stdout, `IMAGE_REF TAR_PATH`, as each is built or found in the cache; logs and
timings go to stderr. The tars are docker-archives for `ctr -n k8s.io images import` or `docker load`.
"""
from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
import time
from pathlib import Path

from . import rootfs, wheels
from .builder import Builder, BuildError, plan
from .cache import Store
from .context import ContextError
from .dockerfile import DockerfileError
from .specs import IMAGES, REPO, Env


def log(message: str) -> None:
    print(f"build-images {time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="scripts/build-images",
        description="Build the project's container images from their Dockerfiles without Docker or a registry "
                    "(debootstrap, chroot, overlayfs; needs root for the Debian-based images). Prints "
                    "'IMAGE_REF TAR_PATH' per image on stdout.",
        epilog="images: " + ", ".join(f"{s.name} ({s.ref}, {s.dockerfile})" for s in IMAGES.values()))
    p.add_argument("--only", nargs="+", action="extend", choices=list(IMAGES), metavar="NAME",
                   help=f"build only these images ({', '.join(IMAGES)}; default: all)")
    p.add_argument("--cache", type=Path, metavar="DIR",
                   help="cache root (default: ${ELASTREAM_CACHE:-~/.cache/elastream}); images go to DIR/images, "
                        "the wheel cache to DIR/wheels")
    p.add_argument("--coredns-bin", type=Path, metavar="PATH",
                   help=f"the CoreDNS binary (default: DIR/bin/coredns-v1.15.0/coredns, made by "
                        "scripts/test-cluster build)")
    p.add_argument("--host-pip", metavar="PIP",
                   help="the host's pip (Python 3.11) that fills the wheel cache (default: .venv/bin/pip)")
    p.add_argument("--no-cache", action="store_true", help="rebuild every step and image")
    p.add_argument("--check", action="store_true",
                   help="run the smoke checks of images that are up to date too (new builds always run them)")
    p.add_argument("--list", action="store_true", help="list the images and exit")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.list:
        for s in IMAGES.values():
            print(f"{s.name}\t{s.ref}\t{s.dockerfile}")
        return 0
    cache = (args.cache or Path(os.environ.get("ELASTREAM_CACHE") or Path.home() / ".cache" / "elastream")).absolute()
    names = [n for n in IMAGES if n in (args.only or IMAGES)]
    store = Store(cache / "images", log)
    env = Env(cache, store, log, args.coredns_bin.absolute() if args.coredns_bin else None)
    pip = shlex.split(args.host_pip) if args.host_pip else wheels.default_pip(REPO)

    def terminate(signum, frame):
        raise SystemExit(128 + signum)          # unwind: finally blocks unmount and remove .tmp-* entries

    signal.signal(signal.SIGTERM, terminate)
    if os.geteuid() == 0:
        rootfs.enter_private_mount_namespace()
    builder = Builder(store, log, no_cache=args.no_cache, recheck=args.check)
    wheel_dir: list[Path] = []

    def wheel_cache() -> Path:
        if not wheel_dir:
            wheel_dir.append(wheels.ensure(REPO / "pyproject.toml", cache / "wheels", pip, log))
        return wheel_dir[0]

    started = time.monotonic()
    try:
        with store.locked():
            for name in names:
                spec = IMAGES[name]
                t0 = time.monotonic()
                context = spec.context(env) if callable(spec.context) else REPO / spec.context
                named = {n: make(env) for n, make in spec.contexts}
                p = plan(name, spec.ref, REPO / spec.dockerfile, context, source=spec.dockerfile, contexts=named)
                extra = {"context": str(context)} if callable(spec.context) else {}
                extra.update({f"context {n}": str(d) for n, d in named.items()})
                tar = builder.build(p, spec.checks, wheel_cache if spec.wheels else None, extra)
                print(f"{spec.ref} {tar}", flush=True)
                log(f"{name}: {spec.ref} ready ({time.monotonic() - t0:.1f} s)")
            store.drop_orphans()
    except (DockerfileError, ContextError) as e:
        log(f"error: {e}")
        return 2
    except (BuildError, rootfs.RootfsError, wheels.WheelError, OSError) as e:
        log(f"error: {e}")
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    log(f"{len(names)} image(s) in {time.monotonic() - started:.1f} s")
    return 0
