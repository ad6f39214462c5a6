"""Reading manifests outside Kubernetes (local mode, tests): the same checks, the same field names."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from elastream.api import API_VERSION
from elastream.api.policy import ElasticityPolicySpec
from elastream.api.streamapp import StreamAppSpec
from elastream.errors import UserError

SPEC_MODELS: dict[str, type[BaseModel]] = {"StreamApp": StreamAppSpec, "ElasticityPolicy": ElasticityPolicySpec}


class ManifestError(UserError):
    """A manifest the API server would reject; `problems` are "field.path: message" lines."""

    def __init__(self, name: str, problems: list[str]):
        self.problems = problems
        super().__init__(f"{name} is invalid:\n  " + "\n  ".join(problems))


def describe_errors(err: ValidationError, prefix: str = "spec") -> list[str]:
    """One "field.path: message" line per error, with wire (camelCase) field names."""
    lines = []
    for e in err.errors():
        path = [prefix, *(str(p) for p in e["loc"])]
        ctx = e.get("ctx") or {}
        if e["type"] == "rule" and ctx.get("field"):
            path.append(ctx["field"])
        if e["type"] == "literal_error":  # worded as the API server words it
            allowed = ctx.get("expected", "").replace("'", '"').replace(" or ", ", ")
            lines.append(f'{".".join(path)}: Unsupported value: "{e["input"]}": supported values: {allowed}')
            continue
        if e["type"] == "missing":
            lines.append(f"{'.'.join(path)}: Required value")
            continue
        if e["type"] == "extra_forbidden":
            lines.append(f'{".".join(path[:-1])}: unknown field "{path[-1]}"')
            continue
        lines.append(f"{'.'.join(path)}: {e['msg']}")
    return lines


def parse_spec(kind: str, spec: Any, name: str = "manifest") -> BaseModel:
    model = SPEC_MODELS.get(kind)
    if model is None:
        raise ManifestError(name, [f"kind: must be one of {', '.join(SPEC_MODELS)}, not {kind!r}"])
    try:
        return model.model_validate(spec if spec is not None else {})
    except ValidationError as err:
        raise ManifestError(f"{kind} {name!r}", describe_errors(err)) from None


def parse_manifest(doc: dict[str, Any]) -> tuple[str, str, BaseModel]:
    """(kind, name, spec model) of a StreamApp or ElasticityPolicy manifest, or ManifestError."""
    if not isinstance(doc, dict):
        raise ManifestError("manifest", ["the document must be a mapping"])
    name = (doc.get("metadata") or {}).get("name") or ""
    problems = []
    if doc.get("apiVersion") != API_VERSION:
        problems.append(f"apiVersion: must be {API_VERSION}, not {doc.get('apiVersion')!r}")
    if not name:
        problems.append("metadata.name: Required value")
    if "spec" not in doc:
        problems.append("spec: Required value")
    if problems:
        raise ManifestError(name or "manifest", problems)
    kind = doc.get("kind")
    return kind, name, parse_spec(kind, doc["spec"], name)
