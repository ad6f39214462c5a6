"""argparse types for the command line's values: the files and folders a command writes, random seeds, counts and load scales. Checked
when the command line is read, so that a bad value is refused in a line before a run of minutes, never with a
traceback after it."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

SEED_MAX = 2**32 - 1  # numpy's seeds: 0 .. 2**32 - 1


def _existing_ancestor(path: Path) -> Path:
    for parent in path.absolute().parents:
        if parent.exists():
            return parent
    return Path("/")


def _check_writable_under(path: Path, what: str) -> None:
    """Refuse a path under a file where a folder should be, or under a folder this user cannot write."""
    ancestor = _existing_ancestor(path)
    if not ancestor.is_dir():
        raise argparse.ArgumentTypeError(f"{path}: {ancestor} is not a folder, so no {what} can be written under it")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{path}: no permission to write in {ancestor}")


def output_file(text: str) -> str:
    """A file to write, in a folder that exists: not empty, not `-`, not an existing folder."""
    if not text.strip():
        raise argparse.ArgumentTypeError("give a file name, not an empty string")
    if text == "-":
        raise argparse.ArgumentTypeError("give a file name; - (standard output) is not supported here")
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; give a file name inside it")
    if path.exists():  # an existing file (or /dev/null): its own permission counts, not its folder's
        if not os.access(path, os.W_OK):
            raise argparse.ArgumentTypeError(f"{text}: no permission to write it")
        return text
    _check_writable_under(path, "file")
    if not path.absolute().parent.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: folder {path.absolute().parent} does not exist")
    return text


def plot_file(text: str) -> str:
    """An image file to draw to, whose extension names a format matplotlib writes (png, svg, pdf, …)."""
    output_file(text)
    from matplotlib.backend_bases import FigureCanvasBase  # only when a plot is asked for

    formats = set(FigureCanvasBase.get_supported_filetypes()) - {"pgf"}  # pgf needs a LaTeX install
    suffix = Path(text).suffix.lstrip(".").lower()
    if suffix not in formats:
        raise argparse.ArgumentTypeError(f"{text}: the extension must name an image format: "
                                         f"{', '.join('.' + f for f in sorted(formats))}")
    return text


def output_dir(text: str) -> Path:
    """A folder to write into (made if missing): not empty, not an existing file."""
    if not text.strip():
        raise argparse.ArgumentTypeError("give a folder name, not an empty string")
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
    _check_writable_under(path / "x", "folder")
    return path


def _whole_number(text: str, lo: int, hi: int | None, what: str, expected: str) -> int:
    """text as an integer in lo..hi (hi None: no upper bound), or ArgumentTypeError saying what was expected."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid {what} {text!r}: {expected}") from None
    if value < lo or (hi is not None and value > hi):
        raise argparse.ArgumentTypeError(f"{value} is not at least {lo}" if hi is None
                                         else f"{what} {value} is outside {lo} .. {hi}")
    return value


def positive_int(text: str) -> int:
    """A count of at least 1 (--jobs)."""
    return _whole_number(text, 1, None, "count", "give a whole number, at least 1")


def random_seed(text: str) -> int:
    """A random seed numpy accepts: an integer 0 .. 2**32 - 1."""
    return _whole_number(text, 0, SEED_MAX, "seed", f"give an integer 0 .. {SEED_MAX}")


def load_scale(text: str) -> float:
    """--scale: a positive factor, at most 10 (past that the families' peaks outgrow the default bounds)."""
    try:
        f = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, e.g. 0.2; got {text!r}") from None
    if not 0 < f <= 10:
        raise argparse.ArgumentTypeError(f"a load scale must be > 0 and at most 10; got {text!r}")
    return f
