"""One app's placement step, after its scaling decision: register with the cluster plan, move the executors the plan
moves (under the scaling guards: each move is a rescale), and say where its executors are planned (status.placement).
"""
from __future__ import annotations

import logging
from typing import Any

from controllers import kube
from controllers.placement import cluster_placement, register_app
from elasticity.autoscaler import JobAutoscaler

log = logging.getLogger(__name__)


def place(namespace: str, name: str, spec, policy, autoscaler: JobAutoscaler, rescaled: bool) -> dict[str, Any] | None:
    """status.placement of the app, or None when its policy does not ask for placement."""
    if policy.placement == "none" or spec.suspend:
        cluster_placement().forget(namespace, name)
        return None
    why = register_app(namespace, name, spec, policy)
    if why:
        return {"algorithm": policy.placement, "message": why}
    planner = cluster_placement()
    planner.current()
    part = planner.for_app(namespace, name)
    if part is None:
        return {"algorithm": policy.placement, "message": planner.problem or "waiting for the first plan"}
    status: dict[str, Any] = dict(part)
    moves = status.pop("moves")
    if moves and not rescaled:  # a rescale in this evaluation already changed the executors: plan again first
        try:
            mover = planner.app(namespace, name).engine.mover(namespace, name, spec)
        except kube.SecretProblem as err:
            status["lastMove"] = {"executors": [], "wanted": moves, "reason": f"cannot reach the job: {err}"}
            return status
        plan = planner.plan
        why_move = (f"the plan ({plan.algorithm}) uses {plan.nodes_used} node(s) where the executors use "
                    f"{plan.current_nodes}")
        result = autoscaler.move(moves, why_move, mover)
        status["lastMove"] = {"executors": result["moved"], "wanted": result["wanted"], "reason": result["reason"]}
    elif moves:
        status["lastMove"] = {"executors": [], "wanted": moves, "reason": "waiting: the app rescaled in this evaluation"}
    return status

