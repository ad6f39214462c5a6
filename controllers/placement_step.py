"""One app's placement step, after its scaling decision: get its part of a plan, move the executors the plan moves
(under the scaling guards: each move is a rescale), and say where its executors are planned (status.placement).

The engine's placement says how it plans (elastream.engines.base): across apps (scope "cluster": one plan packs every
placed app's executor pods onto the nodes, controllers.placement) or per app (scope "app": the engine's own
scheduler lays out the app as planned, in one reconfiguration).
"""
from __future__ import annotations

import logging
from typing import Any

from controllers import kube
from controllers.placement import cluster_placement, register_app
from elastream.engines import engine_for
from elastream.engines.base import JobUnreachable
from elasticity.autoscaler import JobAutoscaler

log = logging.getLogger(__name__)


def place(namespace: str, name: str, spec, policy, autoscaler: JobAutoscaler, rescaled: bool) -> dict[str, Any] | None:
    """status.placement of the app, or None when its policy does not ask for placement."""
    placement = engine_for(spec).placement()
    if policy.placement == "none" or spec.suspend:
        cluster_placement().forget(namespace, name)
        if placement is not None and placement.scope == "app":
            placement.forget(namespace, name)
        return None
    if placement is not None and placement.scope == "app":
        return _place_app(placement, namespace, name, spec, policy, autoscaler, rescaled)
    why = register_app(namespace, name, spec, policy, placement)
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



def _place_app(placement, namespace: str, name: str, spec, policy, autoscaler: JobAutoscaler,
               rescaled: bool) -> dict[str, Any]:
    """An app its engine's scheduler places: the whole plan is applied in one reconfiguration (one rescale)."""
    try:
        layout = placement.layout(namespace, name, spec, policy)
    except JobUnreachable as err:
        return {"algorithm": policy.placement, "message": f"cannot reach the job: {err}"}
    status = dict(layout.status)
    if layout.moves and rescaled:  # the rescale changed the layout: measure it again first
        status["lastMove"] = {"executors": [], "wanted": layout.moves,
                              "reason": "waiting: the app rescaled in this evaluation"}
    elif layout.moves:
        result = autoscaler.move(layout.moves, layout.why, layout.mover, together=True)
        status["lastMove"] = {"executors": result["moved"], "wanted": result["wanted"], "reason": result["reason"]}
    return status
