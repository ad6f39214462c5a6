"""kopf handlers of ElasticityPolicy: validate, report in conditions. StreamApps read their policy at each evaluation."""
from __future__ import annotations

import kopf
from pydantic import ValidationError

from controllers.conditions import set_condition
from elastream.api import GROUP, VERSION
from elastream.api.manifests import describe_errors
from elastream.api.policy import ElasticityPolicySpec


@kopf.on.resume(GROUP, VERSION, "elasticitypolicies")
@kopf.on.create(GROUP, VERSION, "elasticitypolicies")
@kopf.on.update(GROUP, VERSION, "elasticitypolicies", field="spec")
def validate_policy(body: kopf.Body, meta: kopf.Meta, status: kopf.Status, patch: kopf.Patch, **_) -> None:
    generation = meta.get("generation", 0)
    conds = list(status.get("conditions") or [])
    try:
        ElasticityPolicySpec.model_validate(dict(body["spec"]))
        conds = set_condition(conds, "Ready", True, "Valid", "the policy is valid", generation)
    except ValidationError as err:
        conds = set_condition(conds, "Ready", False, "InvalidSpec", "; ".join(describe_errors(err)), generation)
    patch.status["conditions"] = conds
    patch.status["observedGeneration"] = generation
