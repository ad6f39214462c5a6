"""Policies by name: each proposes target parallelism per stage; guards (elasticity.guards) decide what happens."""
from __future__ import annotations

from elasticity.errors import InputError
from elasticity.policies.base import Policy, PolicyContext, Proposal
from elasticity.policies.ds2 import DS2Policy
from elasticity.policies.elastream import ElastreamPolicy
from elasticity.policies.hpa import HPAPolicy
from elasticity.policies.mestream import MeStreamPolicy
from elasticity.policies.rl import RLPolicy
from elasticity.policies.static import StaticPolicy

REGISTRY = {
    "elastream": ElastreamPolicy,
    "ds2": DS2Policy,
    "mestream": MeStreamPolicy,
    "hpa": HPAPolicy,
    "rl": RLPolicy,
    "static": StaticPolicy,
}


def get_policy(name: str) -> Policy:
    try:
        return REGISTRY[name]()
    except KeyError:
        raise InputError(f"unknown policy {name!r}; valid: {', '.join(REGISTRY)}") from None


__all__ = ["REGISTRY", "get_policy", "Policy", "PolicyContext", "Proposal"]
