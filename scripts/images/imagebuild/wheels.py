"""The wheel cache that RUN steps install Python packages from.

pip inside the image build cannot reach PyPI here (the machine's TLS-intercepting proxy is trusted only by the
host's CA bundle, which must not go into an image), and should not have to: the host's pip fetches or builds
every wheel the project needs (its pinned dependencies, their dependencies, and the build backend) into
<cache>/wheels/<key>/, where <key> hashes those requirements. RUN steps of the Python images then see that
directory read-only at /run/elastream-wheels with PIP_NO_INDEX=1 and PIP_FIND_LINKS pointing there, so the
Dockerfile's plain `pip install` works offline and installs exactly these wheels. With Docker the same
Dockerfile installs from PyPI.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Callable

from .cache import remove_tree

INSIDE = "/run/elastream-wheels"

# what RUN steps of images built with the wheel cache see in their environment
PIP_ENV = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": INSIDE, "PIP_DISABLE_PIP_VERSION_CHECK": "1",
           "PIP_ROOT_USER_ACTION": "ignore"}


class WheelError(RuntimeError):
    pass


def requirements(pyproject: Path) -> list[str]:
    """The project's dependencies and build requirements (plus `wheel`, which older setuptools asks for)."""
    data = tomllib.loads(pyproject.read_text())
    deps = list(data.get("project", {}).get("dependencies", []))
    build = list(data.get("build-system", {}).get("requires", []))
    return deps + [r for r in build + ["wheel"] if r not in deps]


def key(reqs: list[str]) -> str:
    return hashlib.sha256(json.dumps({"requirements": reqs, "abi": "cp311"}).encode()).hexdigest()[:16]


def default_pip(repo: Path) -> list[str]:
    venv_pip = repo / ".venv" / "bin" / "pip"
    return [str(venv_pip)] if venv_pip.exists() else [sys.executable, "-m", "pip"]


def ensure(pyproject: Path, root: Path, pip: list[str], log: Callable[[str], None]) -> Path:
    """The wheel directory for `pyproject`'s requirements, made with the host's `pip wheel` if missing."""
    reqs = requirements(pyproject)
    directory = root / key(reqs)
    if (directory / ".complete").is_file():
        return directory
    version = subprocess.run([*pip, "--version"], capture_output=True, text=True)
    if version.returncode != 0 or "(python 3.11)" not in version.stdout:
        raise WheelError(f"{' '.join(pip)} must be pip of Python 3.11 (the images' Python): "
                         f"{(version.stdout or version.stderr).strip()}")
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".tmp-{directory.name}-{os.getpid()}"
    remove_tree(tmp)
    log(f"pip wheel: {len(reqs)} requirements into {directory} (pyspark's wheel is built from its sdist "
        "unless pip's cache has it)")
    try:
        proc = subprocess.run([*pip, "wheel", "--quiet", "--wheel-dir", str(tmp), *reqs],
                              stdin=subprocess.DEVNULL, stdout=sys.stderr, stderr=sys.stderr)
        if proc.returncode != 0:
            raise WheelError(f"pip wheel failed (exit {proc.returncode}); see the output above")
        (tmp / "requirements.txt").write_text("\n".join(reqs) + "\n")
        (tmp / ".complete").touch()
        remove_tree(directory)                 # an incomplete one from an older, interrupted layout
        os.replace(tmp, directory)
    finally:
        remove_tree(tmp)
    for old in root.iterdir():                 # wheels for requirements the project no longer has
        if old != directory and not old.name.startswith(".tmp-"):
            remove_tree(old)
    return directory
