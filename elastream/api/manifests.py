"""Reading manifests outside Kubernetes (local mode, tests, `elastream validate`): the checks the API server makes,
with the same field names. Any input gives a ManifestError naming a field, never a traceback."""
from __future__ import annotations

import math
import re
from typing import Any

from pydantic import BaseModel, ValidationError

from elastream.api import API_VERSION
from elastream.api.policy import ElasticityPolicySpec
from elastream.api.streamapp import STREAMAPP_NAME_MAX, STREAMAPP_NAME_PATTERN, StreamAppSpec
from elastream.errors import UserError, shorten

SPEC_MODELS: dict[str, type[BaseModel]] = {"StreamApp": StreamAppSpec, "ElasticityPolicy": ElasticityPolicySpec}
TOP_LEVEL = ("apiVersion", "kind", "metadata", "spec", "status")
# What the API server requires of a custom resource's name (DNS-1123 subdomain) and of a namespace (DNS-1123 label).
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
ANNOTATIONS_MAX = 256 * 1024  # all of an object's annotations, keys and values (the API server's limit)


# pydantic's type errors, named as the API server names the expected JSON type
TYPE_WORDS = {"dict_type": "object", "model_type": "object", "model_attributes_type": "object", "list_type": "array",
              "string_type": "string", "int_type": "integer", "int_from_float": "integer", "bool_type": "boolean",
              "float_type": "number"}


def _kind_of(value: Any) -> str:
    for kind, word in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (dict, "object"),
                       (list, "array")):
        if isinstance(value, kind):
            return f'"{word}"'
    return '"null"' if value is None else f'"{type(value).__name__}"'


class ManifestError(UserError):
    """A manifest the API server would reject; `problems` are "field.path: message" lines."""

    def __init__(self, name: str, problems: list[str]):
        self.name, self.problems = name, problems
        super().__init__(f"{name} is invalid:\n  " + "\n  ".join(problems))


def _path(prefix: str, loc: tuple) -> list[str]:
    """Field path parts; a list index joins its list as the API server writes it (args[0])."""
    parts = [prefix]
    for p in loc:
        if isinstance(p, int):
            parts[-1] += f"[{p}]"
        else:
            parts.append(shorten(str(p), 64))
    return parts


def describe_errors(err: ValidationError, prefix: str = "spec") -> list[str]:
    """One "field.path: message" line per error, with wire (camelCase) field names; values quoted short."""
    lines = []
    for e in err.errors(include_url=False, include_input=True):
        path = _path(prefix, e["loc"])
        ctx = e.get("ctx") or {}
        if e["type"] == "rule" and ctx.get("field"):
            path.append(ctx["field"])
        where = ".".join(path)
        value = e.get("input")
        if isinstance(value, float) and not math.isfinite(value) and e["type"] != "extra_forbidden":  # YAML's .nan/.inf: JSON cannot carry them
            lines.append(f"{where}: Invalid value: {value}: must be a finite number")
        elif e["type"] == "literal_error":  # worded as the API server words it
            allowed = str(ctx.get("expected", "")).replace("'", '"').replace(" or ", ", ")
            if isinstance(value, (dict, list)):
                lines.append(f"{where}: Invalid value: {_kind_of(value)}: supported values: {allowed}")
            else:
                lines.append(f'{where}: Unsupported value: {shorten(value)!r}: supported values: {allowed}')
        elif e["type"] == "missing":
            lines.append(f"{where}: Required value")
        elif e["type"] == "extra_forbidden":
            lines.append(f'{".".join(path[:-1])}: unknown field "{path[-1]}"')
        elif e["type"] in TYPE_WORDS:
            lines.append(f"{where}: Invalid value: {_kind_of(e['input'])}: must be of type {TYPE_WORDS[e['type']]}")
        elif e["type"] == "string_pattern_mismatch":
            lines.append(f"{where}: Invalid value: {shorten(e['input'])!r}: should match '{ctx.get('pattern')}'")
        else:
            lines.append(f"{where}: {shorten(e['msg'], 300)}")
    return lines


def parse_spec(kind: str, spec: Any, name: str = "manifest") -> BaseModel:
    """The spec as its model, validated strictly (a quoted number is not a number, as for the API server)."""
    model = SPEC_MODELS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise ManifestError(name, [f"kind: must be one of {', '.join(SPEC_MODELS)}, not {shorten(kind)!r}"])
    if not isinstance(spec, dict):
        raise ManifestError(f"{kind} {name!r}", [f"spec: must be a mapping, not {type(spec).__name__}"])
    try:
        return model.model_validate(spec, strict=True)
    except ValidationError as err:
        raise ManifestError(f"{kind} {name!r}", describe_errors(err)) from None
    except RecursionError:
        raise ManifestError(f"{kind} {name!r}", ["spec: nested too deeply"]) from None


def metadata_problems(metadata: Any, kind: Any = None) -> list[str]:
    """What the API server would say of metadata: a mapping, with a DNS-1123 subdomain name (and label namespace);
    a StreamApp's name also as its CRD restricts it (`streamapp_name_problem`)."""
    if metadata is None:
        return ["metadata.name: Required value"]
    if not isinstance(metadata, dict):
        return [f"metadata: must be a mapping, not {type(metadata).__name__}"]
    problems = []
    name = metadata.get("name")
    if name is None or name == "":
        problems.append("metadata.name: Required value")
    elif not isinstance(name, str):
        problems.append(f"metadata.name: must be a string, not {type(name).__name__}")
    elif len(name) > 253 or not DNS_SUBDOMAIN.fullmatch(name):
        problems.append(f"metadata.name: Invalid value: {shorten(name)!r}: a lowercase RFC 1123 subdomain must consist "
                        "of lower case alphanumeric characters, '-' or '.', and must start and end with an "
                        "alphanumeric character (at most 253)")
    elif kind == "StreamApp":
        problems += streamapp_name_problem(name)
    namespace = metadata.get("namespace")
    if namespace is not None and (not isinstance(namespace, str) or len(namespace) > 63
                                  or not DNS_LABEL.fullmatch(namespace)):
        problems.append(f"metadata.namespace: Invalid value: {shorten(namespace)!r}: a lowercase RFC 1123 label "
                        "(at most 63 characters)")
    for field in ("labels", "annotations"):
        value = metadata.get(field)
        if value is not None and not (isinstance(value, dict)
                                      and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())):
            problems.append(f"metadata.{field}: must be a mapping of strings to strings")
        elif field == "annotations" and value and annotation_bytes(value) > ANNOTATIONS_MAX:
            problems.append(f"metadata.annotations: Too long: may not be more than {ANNOTATIONS_MAX} bytes")
    return problems


def annotation_bytes(annotations: dict) -> int:
    """What annotations take against ANNOTATIONS_MAX: the bytes of their keys and values, as the API server counts."""
    return sum(len(str(k).encode()) + len(str(v).encode()) for k, v in annotations.items())


def streamapp_name_problem(name: str) -> list[str]:
    """A StreamApp's name is a DNS-1035 label of at most STREAMAPP_NAME_MAX characters: its Services are named
    after it (NAME-driver, NAME-zookeeper), and the API server would refuse them."""
    if len(name) <= STREAMAPP_NAME_MAX and re.fullmatch(STREAMAPP_NAME_PATTERN, name):
        return []
    return [f"metadata.name: Invalid value: {shorten(name)!r}: a StreamApp's name must be a lowercase RFC 1035 label "
            f"of at most {STREAMAPP_NAME_MAX} characters (lower case alphanumeric characters or '-', starting with a "
            f"letter and ending with an alphanumeric character): its Services are named after it "
            f"({shorten(name, 24)}-driver, {shorten(name, 24)}-zookeeper)"]


def parse_manifest(doc: Any) -> tuple[str, str, BaseModel]:
    """(kind, name, spec model) of a StreamApp or ElasticityPolicy manifest, or ManifestError."""
    if not isinstance(doc, dict):
        raise ManifestError("manifest", [f"manifest: must be a mapping (apiVersion, kind, metadata, spec), "
                                         f"not {type(doc).__name__}"])
    metadata = doc.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    label = shorten(name, 64) if isinstance(name, str) and name else "manifest"
    problems = []
    if doc.get("apiVersion") is None:
        problems.append(f"apiVersion: Required value (it must be {API_VERSION})")
    elif doc.get("apiVersion") != API_VERSION:
        problems.append(f"apiVersion: must be {API_VERSION}, not {shorten(doc.get('apiVersion'))!r}")
    kind = doc.get("kind")
    if kind is None:
        problems.append(f"kind: Required value (one of {', '.join(SPEC_MODELS)})")
    elif not isinstance(kind, str) or kind not in SPEC_MODELS:
        problems.append(f"kind: must be one of {', '.join(SPEC_MODELS)}, not {shorten(kind)!r}")
    problems += metadata_problems(metadata, kind)
    unknown = [k for k in doc if k not in TOP_LEVEL]
    problems += [f'unknown field "{shorten(str(k), 64)}"' for k in unknown]
    if "spec" not in doc or doc["spec"] is None:
        problems.append("spec: Required value")
    if problems:
        raise ManifestError(label, problems)
    return kind, name, parse_spec(kind, doc["spec"], name)
