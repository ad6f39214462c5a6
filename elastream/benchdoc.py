"""Keeps docs/benchmarks.md as sections, one per benchmark, each rewritten by its own command."""
from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
HEADER = "# Benchmarks\n\nEach section is written by the command it names; rerun it to refresh the section.\n"


def write_section(name: str, markdown: str, doc: Path = DOC) -> Path:
    """Replace (or append) the section `name` of the benchmarks document with `markdown`."""
    begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
    block = f"{begin}\n{markdown.strip()}\n{end}\n"
    text = doc.read_text() if doc.exists() else HEADER
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end) + r"\n?", re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + block
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text)
    return doc
