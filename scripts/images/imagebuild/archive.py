"""docker-archive tarballs: one layer, a config, a manifest. `ctr images import`, `docker load` and
`podman load` accept them.

  <diff_id>/layer.tar   the root file system (GNU tar, numeric owners, sorted names)
  <config_id>.json      the image config: architecture, os, config (Env, Entrypoint, Cmd, ...), rootfs, history
  manifest.json         [{"Config": "<config_id>.json", "RepoTags": ["<ref>"], "Layers": ["<diff_id>/layer.tar"]}]

The ids are sha256 hex digests of the layer tar and of the config JSON.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import tarfile
import time
from pathlib import Path

from .cache import remove_tree


def write_layer(rootfs: Path, out: Path) -> str:
    """Tar `rootfs` into `out`; return the layer's sha256 hex digest (its diff_id). Run by a user other than
    root (who cannot give files away), every file is recorded as root's."""
    h = hashlib.sha256()
    cmd = ["tar", "--create", "--file=-", f"--directory={rootfs}", "--numeric-owner", "--sort=name",
           "--format=gnu", *([] if os.geteuid() == 0 else ["--owner=0", "--group=0"]), "."]
    with open(out, "wb") as f:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout is not None
        for chunk in iter(lambda: proc.stdout.read(1 << 20), b""):
            h.update(chunk)
            f.write(chunk)
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        if proc.wait() != 0:
            raise RuntimeError(f"tar of {rootfs} failed ({proc.returncode}): {err.strip()}")
    return h.hexdigest()


def image_config(config: dict, diff_id: str, history: list[str], *, architecture: str,
                 created: str | None = None) -> dict:
    """The image config JSON: `config` is the runtime part (Env, Entrypoint, ...); every instruction goes
    into the history as an empty layer, then one entry for the single flattened layer."""
    created = created or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {
        "architecture": architecture,
        "os": "linux",
        "created": created,
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{diff_id}"]},
        "history": [{"created": created, "created_by": h, "empty_layer": True} for h in history]
        + [{"created": created, "created_by": "scripts/build-images: the steps above, as one layer"}],
    }


def write_docker_archive(out: Path, layer: Path, diff_id: str, config: dict, repo_tags: list[str]) -> None:
    """Write the docker-archive `out` atomically (a .tmp-* file renamed into place)."""
    config_bytes = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
    config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
    layer_name = f"{diff_id}/layer.tar"
    manifest = json.dumps([{"Config": config_name, "RepoTags": repo_tags, "Layers": [layer_name]}]).encode()
    mtime = int(time.time())
    tmp = out.with_name(f".tmp-{out.name}-{os.getpid()}")
    try:
        with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as t:
            t.addfile(_info(f"{diff_id}", 0, mtime, directory=True))
            with open(layer, "rb") as f:
                t.addfile(_info(layer_name, layer.stat().st_size, mtime), f)
            for name, data in ((config_name, config_bytes), ("manifest.json", manifest)):
                t.addfile(_info(name, len(data), mtime), io.BytesIO(data))
        os.replace(tmp, out)
    finally:
        remove_tree(tmp)


def read_docker_archive(path: Path) -> tuple[list[dict], dict, list[str]]:
    """(manifest, config, member names) of a docker-archive: for tests and checks."""
    with tarfile.open(path) as t:
        names = t.getnames()
        manifest = json.load(t.extractfile("manifest.json"))
        config = json.load(t.extractfile(manifest[0]["Config"]))
    return manifest, config, names


def _info(name: str, size: int, mtime: int, directory: bool = False) -> tarfile.TarInfo:
    ti = tarfile.TarInfo(name)
    ti.size, ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname = size, mtime, 0, 0, "", ""
    ti.mode = 0o755 if directory else 0o644
    ti.type = tarfile.DIRTYPE if directory else tarfile.REGTYPE
    return ti

