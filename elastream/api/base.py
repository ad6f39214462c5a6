"""Building blocks of the API models: camelCase fields, durations, and cross-field rules.

A cross-field rule is declared once, as a `Rule`: it becomes a CEL rule (`x-kubernetes-validations`)
in the generated CRD, which the API server enforces, and a Python check with the same message,
which the local mode enforces, so both reject a bad manifest with the same words.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Callable, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError
from pydantic.alias_generators import to_camel

# Spark's memory sizes: a whole number with an optional unit (k, m, g, t, p, optionally followed by b; none: MiB).
# Spark refuses fractions ("1.5g") and Kubernetes suffixes ("2Gi").
QUANTITY_PATTERN = r"^[0-9]{1,9}([kKmMgGtTpP][bB]?|[bB])?$"
K8S_QUANTITY_PATTERN = r"^[0-9]+(\.[0-9]+)?([KMGTPE]i?|[kmgtpe])?$"  # a Kubernetes quantity such as "1Gi"
# the names of objects referred to (an ElasticityPolicy, a claim, a Secret): DNS-1123 subdomains, as metadata.name
NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
# Go's time.ParseDuration syntax (what CEL's duration() accepts): "30s", "1m30s", "1.5h", "250ms".
DURATION_PATTERN = r"^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$"
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ns|us|ms|s|m|h)")

def parse_duration(text: str) -> float:
    """Seconds in a Go-style duration string ("1m30s" -> 90.0)."""
    if not re.fullmatch(DURATION_PATTERN, text):
        raise ValueError(f"{text!r} is not a duration such as 30s, 5m or 1h")
    return sum(float(n) * _UNIT_SECONDS[u] for n, u in _PART.findall(text))


def rule_error(message: str, field: str = "") -> PydanticCustomError:
    """A validation error worded exactly as the matching CEL rule's message (field: relative path, if any)."""
    return PydanticCustomError("rule", "{message}", {"message": message, "field": field})


def _positive_duration(text: str) -> str:
    seconds = parse_duration(text)
    if seconds <= 0:
        raise rule_error(POSITIVE_DURATION)
    if seconds > MAX_DURATION_S:
        raise rule_error(DURATION_TOO_LONG)
    return text


POSITIVE_DURATION = "must be a positive duration such as 30s, 5m or 1h"
# The API server's durations are Go's time.Duration (int64 nanoseconds): about 292 years. CEL's duration() fails
# on anything longer, so both sides refuse it; a year is already far beyond any sensible setting.
MAX_DURATION_S = 8760 * 3600
DURATION_TOO_LONG = "must be at most 8760h (one year)"

Duration = Annotated[
    str,
    Field(
        pattern=DURATION_PATTERN,
        max_length=32,
        json_schema_extra={
            "x-kubernetes-validations": [
                {"rule": "duration(self) > duration('0s')", "message": POSITIVE_DURATION},
                {"rule": "duration(self) <= duration('8760h')", "message": DURATION_TOO_LONG},
            ]
        },
    ),
    AfterValidator(_positive_duration),
]


@dataclass(frozen=True)
class Rule:
    """A cross-field rule: `cel` for the API server, `check` for Python; both mean the same."""

    cel: str
    message: str
    check: Callable[[Any], bool]
    field_path: str | None = None  # relative to the object holding the rule, e.g. ".spark"

    def as_cel(self) -> dict[str, str]:
        out = {"rule": self.cel, "message": self.message}
        if self.field_path:
            out["fieldPath"] = self.field_path
        return out


def keys_rule(field: str, limit: int, reserved_prefix: str | None = None) -> Rule:
    """Map keys are not length-checked by the schema (structural schemas have no propertyNames): a rule does it,
    and refuses keys under `reserved_prefix` when given."""
    camel = to_camel(field)
    cel = f"k.size() > 0 && k.size() <= {limit}"
    message = f"{camel} keys must be 1 to {limit} characters"
    if reserved_prefix:
        cel += f" && !k.startsWith('{reserved_prefix}')"
        message += f" and not under {reserved_prefix} (the operator's)"
    return Rule(f"self.{camel}.all(k, {cel})", message,
                lambda m: all(0 < len(k) <= limit and not (reserved_prefix and k.startswith(reserved_prefix))
                              for k in getattr(m, field)), f".{camel}")


def not_in_rule(field: str, values: tuple[str, ...], message: str) -> Rule:
    """`field` (a string) is none of `values`: a CEL list membership and its Python twin."""
    camel = to_camel(field)
    listed = ", ".join(f'"{v}"' for v in values)
    return Rule(f"!(self.{camel} in [{listed}])", message, lambda m: getattr(m, field) not in values, f".{camel}")


class ApiModel(BaseModel):
    """Base of every API model: camelCase on the wire, unknown fields rejected, rules enforced."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", validate_default=True
    )
    rules: ClassVar[tuple[Rule, ...]] = ()

    @model_validator(mode="after")
    def _check_rules(self):
        for rule in type(self).rules:
            if not rule.check(self):
                field = rule.field_path.lstrip(".") if rule.field_path else ""
                raise rule_error(rule.message, field)
        return self

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema, handler):
        schema = handler(core_schema)
        if cls.rules:
            target = handler.resolve_ref_schema(schema)
            target["x-kubernetes-validations"] = [r.as_cel() for r in cls.rules]
        return schema

    def to_wire(self) -> dict[str, Any]:
        """The object as it appears in a manifest (camelCase, unset fields left out)."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")
