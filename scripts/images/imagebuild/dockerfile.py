"""The Dockerfile subset that scripts/build-images interprets.

Parsing only: no file system, no processes. `parse()` turns a Dockerfile into `Instruction`s and refuses, with
the file name and line, whatever the builder would not reproduce faithfully: unknown or unsupported
instructions (ADD, SHELL, VOLUME, ...), flags other than COPY --chown/--chmod/--from (--from names a build
context given to the builder, never a stage: see builder.plan), multi-stage builds, heredocs,
exec forms that are not valid JSON. `words()` and `pairs()` do Docker's quote removal and variable
substitution ($VAR, ${VAR}, ${VAR:-default}, ${VAR:+alternative}) for the instructions that need it.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Mapping

SUPPORTED = ("FROM", "ARG", "ENV", "LABEL", "RUN", "COPY", "WORKDIR", "USER", "EXPOSE", "ENTRYPOINT", "CMD")

# instruction -> why it is refused (and what to write instead)
UNSUPPORTED = {
    "ADD": "use COPY (ADD's URLs, git sources and archive extraction are not reproduced)",
    "ONBUILD": "triggers for child images are not reproduced",
    "SHELL": "RUN's shell form always runs /bin/sh -c",
    "HEALTHCHECK": "use the pod's probes",
    "STOPSIGNAL": "set it in the pod spec or handle SIGTERM",
    "VOLUME": "declare volumes in the pod spec",
    "MAINTAINER": "use LABEL",
}

# flags each instruction accepts; anything else is refused with a reason when we know one
ALLOWED_FLAGS = {"COPY": ("chown", "chmod", "from")}  # --from: a named build context (builder.plan checks it)
FLAG_REASONS = {
    "from": "multi-stage builds are not supported (COPY --from takes a named build context)",
    "mount": "the builder provides the wheel cache itself, Docker users get PyPI",
    "network": "RUN steps always have the host's network",
    "security": "RUN steps run unconfined",
    "platform": "only the host's platform is built",
    "checksum": "remote sources are not supported",
    "keep-git-dir": "git sources are not supported",
    "exclude": "use .dockerignore",
}

EXEC_FORM = ("RUN", "CMD", "ENTRYPOINT", "COPY")
_HEREDOC = re.compile(r"(?<!<)<<-?\s*[\"']?[A-Za-z_][A-Za-z0-9_]*[\"']?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class DockerfileError(ValueError):
    """A Dockerfile the builder will not build; the message names the file and line."""

    def __init__(self, source: str, line: int | None, message: str):
        self.source, self.line, self.message = source, line, message
        super().__init__(f"{source}:{line}: {message}" if line else f"{source}: {message}")


@dataclass(frozen=True)
class Instruction:
    keyword: str                             # upper case: RUN, COPY, ...
    flags: tuple[tuple[str, str], ...]       # (name, value) of leading --name=value flags
    args: str                                # the text after the keyword and its flags, continuations joined
    line: int                                # where the instruction starts
    source: str = "Dockerfile"
    exec_form: tuple[str, ...] | None = None  # the JSON array of RUN/CMD/ENTRYPOINT/COPY ["...", ...]

    @property
    def text(self) -> str:
        """One canonical line: what the cache key and the image history record."""
        flags = "".join(f"--{k}={v} " for k, v in self.flags)
        args = json.dumps(list(self.exec_form)) if self.exec_form is not None else " ".join(self.args.split())
        return f"{self.keyword} {flags}{args}".rstrip()

    def flag(self, name: str) -> str | None:
        return dict(self.flags).get(name)

    def error(self, message: str) -> DockerfileError:
        return DockerfileError(self.source, self.line, f"{self.keyword}: {message}")


def parse(text: str, source: str = "Dockerfile") -> list[Instruction]:
    """The instructions of a Dockerfile, checked against the supported subset."""
    instructions: list[Instruction] = []
    pending: tuple[int, list[str]] | None = None   # (first line, pieces) of an instruction being continued
    directives = True
    for lineno, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if pending is None:
            if directives:
                m = re.fullmatch(r"#\s*([A-Za-z]+)\s*=\s*(.*?)", stripped)
                if m:
                    _directive(source, lineno, m.group(1).lower(), m.group(2))
                    continue
                directives = False
            if not stripped or stripped.startswith("#"):
                continue
            pending = (lineno, [])
        elif not stripped or stripped.startswith("#"):
            continue          # Docker drops comment and empty lines inside a continued instruction
        body = raw.rstrip()
        if body.endswith("\\"):
            pending[1].append(body[:-1])
            continue
        pending[1].append(raw)
        instructions.append(_instruction(source, pending[0], "".join(pending[1]).strip()))
        pending = None
    if pending is not None:
        raise DockerfileError(source, pending[0], "the file ends inside a line continuation")
    _check_structure(source, instructions)
    return instructions


def _directive(source: str, line: int, name: str, value: str) -> None:
    if name == "escape" and value != "\\":
        raise DockerfileError(source, line, f"parser directive escape={value} is not supported (only \\)")
    # syntax= and check= only select or configure BuildKit's frontend; unknown directives are comments


def _instruction(source: str, line: int, text: str) -> Instruction:
    word, _, rest = text.partition(" ")
    if "\t" in word:
        word, _, more = word.partition("\t")
        rest = more + " " + rest
    keyword, rest = word.upper(), rest.strip()
    if keyword in UNSUPPORTED:
        raise DockerfileError(source, line, f"{keyword} is not supported by scripts/build-images: "
                                            f"{UNSUPPORTED[keyword]}")
    if keyword not in SUPPORTED:
        raise DockerfileError(source, line, f"unknown instruction {word!r} "
                                            f"(scripts/build-images supports {', '.join(SUPPORTED)})")
    flags: list[tuple[str, str]] = []
    while rest.startswith("--"):
        token, _, after = rest.partition(" ")
        name, _, value = token[2:].partition("=")
        if name not in ALLOWED_FLAGS.get(keyword, ()):
            reason = FLAG_REASONS.get(name)
            raise DockerfileError(source, line, f"{keyword} --{name} is not supported by scripts/build-images"
                                                + (f": {reason}" if reason else ""))
        if not value:
            raise DockerfileError(source, line, f"{keyword} --{name} needs a value (--{name}=...)")
        flags.append((name, value))
        rest = after.strip()
    if keyword in ("RUN", "COPY") and _HEREDOC.search(rest):
        raise DockerfileError(source, line, f"{keyword}: heredocs (<<EOF) are not supported")
    exec_form = None
    # exec form: a JSON array; `RUN [ -f x ] && ...` is a shell test, not a broken array
    if keyword in EXEC_FORM and re.match(r"\[\s*(?:[\"']|\]\s*$)", rest):
        try:
            value = json.loads(rest)
        except json.JSONDecodeError as e:
            raise DockerfileError(source, line, f"{keyword}: the exec form must be a JSON array of strings "
                                                f"({e.msg}); use double quotes") from None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise DockerfileError(source, line, f"{keyword}: the exec form must be a JSON array of strings")
        exec_form = tuple(value)
    if not rest and keyword not in ("CMD", "ENTRYPOINT"):
        raise DockerfileError(source, line, f"{keyword} needs arguments")
    if keyword in ("RUN", "COPY") and exec_form is not None and not exec_form:
        raise DockerfileError(source, line, f"{keyword} needs arguments")
    return Instruction(keyword, tuple(flags), rest, line, source, exec_form)


def _check_structure(source: str, instructions: list[Instruction]) -> None:
    if not instructions:
        raise DockerfileError(source, None, "no instructions")
    froms = [i for i in instructions if i.keyword == "FROM"]
    if not froms:
        raise DockerfileError(source, None, "no FROM instruction")
    if instructions[0].keyword != "FROM":
        first = instructions[0]
        what = "ARG before FROM is" if first.keyword == "ARG" else f"{first.keyword} before FROM is"
        raise DockerfileError(source, first.line, f"{what} not supported; start with FROM")
    if len(froms) > 1:
        raise DockerfileError(source, froms[1].line, "a second FROM: multi-stage builds are not supported")
    parts = froms[0].args.split()
    if len(parts) not in (1, 3) or (len(parts) == 3 and parts[1].upper() != "AS"):
        raise froms[0].error("expected FROM IMAGE[:TAG] [AS NAME]")
    if "$" in parts[0]:
        raise froms[0].error("variables in FROM are not supported")


def from_image(instruction: Instruction) -> str:
    """The image a FROM names (without its AS alias)."""
    return instruction.args.split()[0]


# -- words: quote removal and variable substitution ------------------------------------------------------------

def words(instruction: Instruction, env: Mapping[str, str], text: str | None = None, *,
          split: bool = True, quotes: bool = True) -> list[str]:
    """Docker's word processing of `text` (default: the instruction's args): quotes removed, $VAR, ${VAR},
    ${VAR:-word} and ${VAR:+word} substituted from `env`, split on unquoted white space if `split`."""
    return _Lexer(instruction, env, quotes).run(instruction.args if text is None else text, split)


def expand(instruction: Instruction, env: Mapping[str, str], text: str) -> str:
    """Substitute variables in `text` and keep everything else (quotes included) as is: for the elements of
    an exec-form JSON array."""
    return "".join(words(instruction, env, text, split=False, quotes=False))


def pairs(instruction: Instruction, env: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """The KEY=VALUE pairs of ENV, LABEL or ARG (ARG also takes a bare NAME: value None). The legacy
    `ENV KEY VALUE...` form is accepted for ENV."""
    items = words(instruction, env)
    if instruction.keyword == "ENV" and items and "=" not in items[0]:
        key, _, value = instruction.args.partition(" ")
        if not value.strip():
            raise instruction.error(f"{key}: missing value (ENV KEY=VALUE)")
        return [(key, " ".join(words(instruction, env, value.strip(), split=False)))]
    result: list[tuple[str, str | None]] = []
    for item in items:
        key, eq, value = item.partition("=")
        if not key:
            raise instruction.error(f"{item!r}: empty name")
        if not eq:
            if instruction.keyword != "ARG":
                raise instruction.error(f"{item!r}: expected KEY=VALUE")
            result.append((key, None))
            continue
        if instruction.keyword in ("ENV", "ARG") and not _NAME.fullmatch(key):
            raise instruction.error(f"{key!r} is not a valid variable name")
        result.append((key, value))
    if not result:
        raise instruction.error("expected KEY=VALUE")
    return result


class _Lexer:
    def __init__(self, instruction: Instruction, env: Mapping[str, str], quotes: bool):
        self.instruction, self.env, self.quotes = instruction, env, quotes

    def run(self, text: str, split: bool) -> list[str]:
        out: list[str] = []
        cur: list[str] = []
        have = False
        quote = None
        i, n = 0, len(text)
        while i < n:
            c = text[i]
            if quote is None:
                if split and c.isspace():
                    if have:
                        out.append("".join(cur))
                        cur, have = [], False
                    i += 1
                    continue
                if c == "$":                     # an empty unquoted expansion makes no word
                    value, i = self._variable(text, i)
                    cur.append(value)
                    have = have or bool(value) or not split
                    continue
                have = True
                if self.quotes and c in "'\"":
                    quote = c
                    i += 1
                elif c == "\\" and i + 1 < n and (self.quotes or text[i + 1] == "$"):
                    cur.append(text[i + 1])
                    i += 2
                else:
                    cur.append(c)
                    i += 1
            elif quote == "'":
                if c == "'":
                    quote = None
                else:
                    cur.append(c)
                i += 1
            else:
                if c == '"':
                    quote = None
                    i += 1
                elif c == "\\" and i + 1 < n and text[i + 1] in '"\\$':
                    cur.append(text[i + 1])
                    i += 2
                elif c == "$":
                    value, i = self._variable(text, i)
                    cur.append(value)
                else:
                    cur.append(c)
                    i += 1
        if quote is not None:
            raise self.instruction.error(f"unterminated {quote} quote")
        if have:
            out.append("".join(cur))
        return out

    def _variable(self, text: str, i: int) -> tuple[str, int]:
        """Expand the variable at text[i] == '$'; return (value, index after it)."""
        if i + 1 < len(text) and text[i + 1] == "{":
            end = text.find("}", i + 2)
            if end < 0:
                raise self.instruction.error("unterminated ${")
            body = text[i + 2:end]
            if "${" in body:
                raise self.instruction.error(f"nested substitution in ${{{body}}} is not supported")
            m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-+])(.*))?", body, re.S)
            if not m:
                raise self.instruction.error(f"${{{body}}}: only ${{VAR}}, ${{VAR:-word}} and ${{VAR:+word}} "
                                             "are supported")
            name, op, word = m.groups()
            value = self.env.get(name)
            if op is None:
                return value or "", end + 1
            word = "".join(_Lexer(self.instruction, self.env, False).run(word, False))
            unset = value is None or (op.startswith(":") and value == "")
            if op.endswith("-"):
                return (word if unset else value), end + 1
            return ("" if unset else word), end + 1
        m = _NAME.match(text, i + 1)
        if not m:
            return "$", i + 1
        return self.env.get(m.group(0), ""), m.end()
