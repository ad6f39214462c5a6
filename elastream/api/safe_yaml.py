"""Loading manifests from YAML without surprises: duplicate keys and alias bombs are errors, not silent choices.

kubectl refuses a mapping with the same key twice (`yaml: unmarshal errors: mapping key "x" already defined`),
while PyYAML keeps the last one: a typo'd second `max:` would be validated as if the first never existed.
Aliases (`*name`) are allowed, but a document whose aliases expand to more than MAX_NODES nodes (the
"billion laughs") is refused before anything walks it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import yaml

from elastream.errors import UserError, shorten

MAX_NODES = 100_000  # an expanded manifest this large is an attack or a mistake, never a StreamApp
MAX_BYTES = 3 * 1024 * 1024  # the most the API server takes in one request; read no further (/dev/zero never ends)
MERGE_TAG = "tag:yaml.org,2002:merge"


class ManifestYAMLError(yaml.YAMLError):
    """A document kubectl would refuse too; the message says where."""


def _where(node: yaml.Node) -> str:
    mark = node.start_mark
    return f"line {mark.line + 1}, column {mark.column + 1}"


class StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys and documents whose aliases expand past MAX_NODES."""

    def compose_document(self):
        node = super().compose_document()
        if node is not None:
            _check_expanded_size(node)
        return node

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            _check_duplicate_keys(node)
        return super().construct_mapping(node, deep=deep)


def _check_duplicate_keys(node: yaml.MappingNode) -> None:
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        if key_node.tag == MERGE_TAG or not isinstance(key_node, yaml.ScalarNode):
            continue  # merge keys (<<) may be overridden; complex keys are refused later by the models
        key = key_node.value
        if key in seen:
            raise ManifestYAMLError(f"{_where(key_node)}: mapping key {shorten(key)!r} already defined at "
                                    f"{_where(seen[key])}")
        seen[key] = key_node


def _check_expanded_size(root: yaml.Node) -> None:
    """Count the nodes the document expands to, each shared (aliased) node counted once per use, memoized so that
    the count itself stays cheap; refuse above MAX_NODES."""
    sizes: dict[int, int] = {}
    in_progress: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in in_progress:  # a recursive alias: never a valid manifest
            raise ManifestYAMLError(f"{_where(node)}: a recursive alias (an anchor used inside itself)")
        in_progress.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            children = []
        for child in children:
            total += size(child)
            if total > MAX_NODES:
                raise ManifestYAMLError(f"{_where(root)}: the document expands to more than {MAX_NODES} nodes "
                                        "through its aliases (*name); write it out, or use fewer aliases")
        in_progress.discard(key)
        sizes[key] = total
        return total

    size(root)


def _yaml_problem(err: yaml.YAMLError) -> str:
    """":LINE:COLUMN: not valid YAML: what", on one line (PyYAML's own text spans several and names no file)."""
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None)
    if mark is None or not problem:
        return f": not valid YAML: {shorten(' '.join(str(err).split()), 600)}"
    context = getattr(err, "context", None)
    context_mark = getattr(err, "context_mark", None)
    where = f" (while {context.removeprefix('while ')} at line {context_mark.line + 1})" if context and context_mark \
        else ""
    return f":{mark.line + 1}:{mark.column + 1}: not valid YAML: {shorten(problem, 300)}{where}"


def load_all(text: str) -> Iterator[Any]:
    """The documents of a YAML stream (None for empty ones), or ManifestYAMLError / yaml.YAMLError."""
    return yaml.load_all(text, Loader=StrictLoader)


def read_documents(path: Path) -> list[Any]:
    """The non-empty documents of a YAML file, or UserError naming the file and what is wrong with it."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as err:
        raise UserError(f"{path}: {err.strerror or err}") from None
    if len(data) > MAX_BYTES:
        raise UserError(f"{path}: larger than {MAX_BYTES // 2**20} MiB, the most the API server accepts in one "
                        "request; split it into several files")
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text") from None
    try:
        return [d for d in load_all(text) if d is not None]
    except yaml.YAMLError as err:
        raise UserError(f"{path}{_yaml_problem(err)}") from None
    except RecursionError:
        raise UserError(f"{path}: not valid YAML: nested too deeply") from None
