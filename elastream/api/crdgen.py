"""CustomResourceDefinitions generated from the pydantic models (the models are the single source of truth).

Pydantic's JSON schema is turned into a Kubernetes *structural* schema: references inlined, Optional[X]
turned into X (absent rather than null), titles dropped, default factories turned into defaults so the
API server fills nested defaults in.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema

from elastream.api import GROUP, VERSION
from elastream.api.policy import ElasticityPolicySpec
from elastream.api.status import ElasticityPolicyStatus, StreamAppStatus
from elastream.api.streamapp import STREAMAPP_NAME_MAX, STREAMAPP_NAME_PATTERN, StreamAppSpec

ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = ROOT / "crds"
CHART_CRD_DIR = ROOT / "charts" / "elastream" / "crds"  # Helm installs these before the templates


def _plain(value: Any) -> Any:
    """A default as plain JSON data without nulls (the API server would reject null defaults)."""
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, exclude_none=True, mode="json")
    return value


class _CrdSchema(GenerateJsonSchema):
    def default_schema(self, schema):
        if "default_factory" in schema and not schema.get("default_factory_takes_data"):
            factory = schema["default_factory"]
            schema = {k: v for k, v in schema.items() if k != "default_factory"}
            schema["default"] = _plain(factory())
        return super().default_schema(schema)


def _structural(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_structural(n, defs) for n in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    if "$ref" in node:  # inline the definition, keeping sibling keys (description, default)
        target = copy.deepcopy(defs[node.pop("$ref").split("/")[-1]])
        node = {**target, **node}
    if "anyOf" in node:  # Optional[X] -> X: absent, not null
        branches = [b for b in node.pop("anyOf") if b.get("type") != "null"]
        if len(branches) != 1:
            raise ValueError(f"cannot express a union of {len(branches)} types in a structural schema")
        node = {**_structural(branches[0], defs), **node}
    if "allOf" in node and len(node["allOf"]) == 1:
        node = {**_structural(node.pop("allOf")[0], defs), **node}
    node.pop("title", None)
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if bound in node and not isinstance(node[bound], bool):  # JSON Schema 2020 -> OpenAPI 3.0
            node[limit], node[bound] = node[bound], True
    if node.get("default", 0) is None:
        node.pop("default")
    if node.get("additionalProperties") is True and node.get("x-kubernetes-preserve-unknown-fields"):
        node.pop("additionalProperties")  # free-form: kept as written, which a structural schema says this way
    if node.get("additionalProperties") is False:  # unknown fields are rejected by kubectl's strict validation
        node.pop("additionalProperties")
    return {k: _structural(v, defs) if k != "default" else v for k, v in node.items()}


def openapi_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The structural OpenAPI v3 schema of a model, as Kubernetes wants it."""
    raw = model.model_json_schema(by_alias=True, schema_generator=_CrdSchema)
    defs = raw.pop("$defs", {})
    return _structural(raw, defs)


def _condition_list(schema: dict[str, Any]) -> None:
    conditions = schema["properties"]["conditions"]
    conditions["x-kubernetes-list-type"] = "map"
    conditions["x-kubernetes-list-map-keys"] = ["type"]


def _crd(kind: str, plural: str, short: list[str], spec: type[BaseModel], status: type[BaseModel],
         columns: list[dict[str, Any]], scale: dict[str, str] | None = None,
         name_schema: dict[str, Any] | None = None) -> dict[str, Any]:
    status_schema = openapi_schema(status)
    _condition_list(status_schema)
    subresources: dict[str, Any] = {"status": {}}
    metadata: dict[str, Any] = {"type": "object"}
    if name_schema:  # a CRD's schema may restrict metadata.name (and generateName), nothing else of metadata
        metadata["properties"] = {"name": name_schema}
    if scale:
        subresources["scale"] = scale
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower(),
                      "shortNames": short, "categories": ["elastream"]},
            "scope": "Namespaced",
            "versions": [{
                "name": VERSION, "served": True, "storage": True,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "required": ["spec"],
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": metadata,
                        "spec": openapi_schema(spec),
                        "status": status_schema,
                    },
                }},
                "subresources": subresources,
                "additionalPrinterColumns": columns,
            }],
        },
    }


def _col(name: str, type_: str, path: str, description: str, priority: int = 0) -> dict[str, Any]:
    col = {"name": name, "type": type_, "jsonPath": path, "description": description}
    if priority:
        col["priority"] = priority
    return col


AGE = _col("Age", "date", ".metadata.creationTimestamp", "time since creation")


def streamapp_crd() -> dict[str, Any]:
    return _crd(
        "StreamApp", "streamapps", ["sapp"], StreamAppSpec, StreamAppStatus,
        [
            _col("Engine", "string", ".spec.engine", "spark or storm"),
            _col("Executors", "integer", ".status.currentExecutors", "executors (or workers) running"),
            _col("Desired", "integer", ".spec.replicas", "executors (or workers) wanted"),
            _col("Latency", "number", ".status.latencyP99Seconds", "end-to-end p99 latency, seconds"),
            _col("Phase", "string", ".status.phase", "lifecycle phase"),
            AGE,
            _col("Policy", "string", ".spec.policyRef.name", "the ElasticityPolicy", priority=1),
            _col("Decision", "string", ".status.lastDecision.reason", "why it last scaled or held", priority=1),
        ],
        scale={"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.currentExecutors",
               "labelSelectorPath": ".status.selector"},
        name_schema={"type": "string", "maxLength": STREAMAPP_NAME_MAX, "pattern": STREAMAPP_NAME_PATTERN},
    )


def policy_crd() -> dict[str, Any]:
    return _crd(
        "ElasticityPolicy", "elasticitypolicies", ["epol"], ElasticityPolicySpec, ElasticityPolicyStatus,
        [
            _col("Mode", "string", ".spec.mode", "auto or advisor"),
            _col("Algorithm", "string", ".spec.algorithm", "the planner"),
            _col("Target", "string", ".spec.latencyTarget", "p99 latency target"),
            _col("Utilization", "number", ".spec.targetUtilization", "target utilization"),
            AGE,
        ],
    )


def render() -> dict[str, str]:
    """File name -> YAML text of every CRD."""
    crds = {f"{GROUP}_streamapps.yaml": streamapp_crd(), f"{GROUP}_elasticitypolicies.yaml": policy_crd()}
    header = "# Generated by `elastream crds` from the pydantic models in elastream/api. Do not edit.\n"
    return {name: header + yaml.safe_dump(crd, sort_keys=False, width=120) for name, crd in crds.items()}


def write(*directories: Path) -> list[Path]:
    """Write every CRD into each directory (default: crds/ and the Helm chart's crds/)."""
    paths = []
    for directory in directories or (CRD_DIR, CHART_CRD_DIR):
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in render().items():
            path = directory / name
            path.write_text(text)
            paths.append(path)
    return paths
