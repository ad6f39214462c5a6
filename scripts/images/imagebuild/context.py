"""The build context: .dockerignore and the files a COPY takes, with a digest of their content.

The digest covers what ends up in the image and nothing else: relative path, type, permission bits, and file
content or link target. Modification times, owners and ignored files (`**/__pycache__`, ...) do not count, so
touching a file or running the tests does not invalidate the cache, while editing a copied file does.
"""
from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath


class ContextError(ValueError):
    pass


class DockerIgnore:
    """The patterns of a .dockerignore file, with Docker's semantics: Go filepath.Match globs plus `**`,
    `!` exceptions, the last matching pattern wins, and a pattern that matches a directory excludes what
    is below it."""

    def __init__(self, lines: list[str] | tuple[str, ...] = ()):
        self.patterns: list[tuple[bool, re.Pattern[str]]] = []
        for line in lines:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            negate = line.startswith("!")
            if negate:
                line = line[1:].strip()
            line = os.path.normpath(line).lstrip("/")
            if line in ("", "."):
                continue
            self.patterns.append((negate, re.compile(_glob_to_regex(line))))

    @classmethod
    def for_build(cls, context: Path, dockerfile: Path) -> "DockerIgnore":
        """BuildKit's choice: <Dockerfile>.dockerignore next to the Dockerfile, else <context>/.dockerignore."""
        for candidate in (dockerfile.with_name(dockerfile.name + ".dockerignore"), context / ".dockerignore"):
            if candidate.is_file():
                return cls(candidate.read_text().splitlines())
        return cls()

    def excluded(self, relpath: str) -> bool:
        path = PurePosixPath(relpath)
        candidates = [str(path)] + [str(p) for p in path.parents if str(p) != "."]
        excluded = False
        for negate, regex in self.patterns:
            if any(regex.fullmatch(c) for c in candidates):
                excluded = not negate
        return excluded


def _glob_to_regex(pattern: str) -> str:
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                i += 2
                if i < n and pattern[i] == "/":
                    out.append("(?:.*/)?")     # **/ : zero or more directories
                    i += 1
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                raise ContextError(f".dockerignore: unterminated [ in {pattern!r}")
            body = pattern[i + 1:end]
            if body.startswith("^") or body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class Entry:
    """One thing a COPY source brings: `rel` is relative to the source ('' for the source itself)."""
    rel: str
    path: Path
    kind: str           # "file", "dir" or "link"
    mode: int           # permission bits
    digest: str         # sha256 of the content, the link target, or "" for a directory


@dataclass
class Source:
    name: str           # as written in the COPY, relative to the context
    path: Path
    is_dir: bool
    entries: list[Entry] = field(default_factory=list)


def collect(context: Path, names: list[str], ignore: DockerIgnore) -> list[Source]:
    """The files behind COPY sources `names`, in a stable order. Refuses what Docker would not find and
    what we do not reproduce (wildcards, paths outside the context)."""
    sources = []
    root = context.resolve()
    for name in names:
        if any(ch in name for ch in "*?["):
            raise ContextError(f"COPY {name}: wildcards are not supported by scripts/build-images; "
                               "name the files")
        rel = os.path.normpath(name.lstrip("/"))
        if rel == ".." or rel.startswith("../"):
            raise ContextError(f"COPY {name}: outside the build context {context}")
        path = root / rel if rel != "." else root
        if (rel != "." and ignore.excluded(rel)) or not os.path.lexists(path):
            raise ContextError(f"COPY {name}: not found in the build context {context}"
                               + (" (excluded by .dockerignore)" if os.path.lexists(path) else ""))
        st = path.stat()        # a source that is itself a link is followed, as Docker does
        source = Source(name, path, stat.S_ISDIR(st.st_mode))
        if source.is_dir:
            source.entries = list(_walk(path, "" if rel == "." else rel, ignore))
        else:
            source.entries = [_entry(path, "", st, follow=True)]
        sources.append(source)
    return sources


def _walk(top: Path, top_rel: str, ignore: DockerIgnore):
    yield _entry(top, "", top.stat(), follow=True)
    stack = [(top, "")]
    while stack:
        directory, rel = stack.pop()
        children = sorted(os.listdir(directory))
        subdirs = []
        for child in children:
            child_rel = f"{rel}/{child}" if rel else child
            context_rel = f"{top_rel}/{child_rel}" if top_rel else child_rel
            if ignore.excluded(context_rel):
                continue
            path = directory / child
            st = path.lstat()
            yield _entry(path, child_rel, st, follow=False)
            if stat.S_ISDIR(st.st_mode):
                subdirs.append((path, child_rel))
        stack.extend(reversed(subdirs))


def _entry(path: Path, rel: str, st: os.stat_result, follow: bool) -> Entry:
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISLNK(st.st_mode) and not follow:
        return Entry(rel, path, "link", mode, hashlib.sha256(os.readlink(path).encode()).hexdigest())
    if stat.S_ISDIR(st.st_mode):
        return Entry(rel, path, "dir", mode, "")
    if stat.S_ISREG(st.st_mode):
        return Entry(rel, path, "file", mode, file_sha256(path))
    raise ContextError(f"{path}: only files, directories and symbolic links can be copied")


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def digest(sources: list[Source]) -> str:
    """The content digest of COPY sources (what the cache key of a COPY includes)."""
    h = hashlib.sha256()
    for source in sources:
        h.update(f"source {source.name} {'dir' if source.is_dir else 'file'}\n".encode())
        for e in source.entries:
            h.update(f"{e.kind} {e.mode:o} {e.digest} {e.rel}\n".encode())
    return h.hexdigest()
