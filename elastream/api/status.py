"""Status of a StreamApp: phase, Kubernetes-style conditions, executors, and the decisions with their reasons."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from elastream.api.base import ApiModel

CONDITION_TYPES = ("Ready", "Progressing", "Scaling", "MetricsAvailable", "BottleneckDetected", "Degraded", "OnSchedule")
HISTORY_LIMIT = 20


class Condition(ApiModel):
    type: Literal["Ready", "Progressing", "Scaling", "MetricsAvailable", "BottleneckDetected", "Degraded", "OnSchedule"]
    status: Literal["True", "False", "Unknown"]
    reason: str = Field(..., max_length=1024, pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
    message: str = Field("", max_length=32768)
    last_transition_time: str = Field(..., description="RFC 3339 time of the last status change")
    observed_generation: int | None = Field(None, ge=0)


class Decision(ApiModel):
    """One evaluation of the policy: what it decided, why, and the numbers it used."""

    time: str = Field(..., description="RFC 3339")
    action: Literal["scaleUp", "scaleDown", "hold", "none"]
    from_: int | None = Field(None, alias="from", ge=0, description="executors before")
    to: int | None = Field(None, ge=0, description="executors decided")
    reason: str = Field(..., max_length=4096, description="why it scaled, or why not")
    algorithm: str | None = None
    realized: bool = Field(False, description="false in advisor mode or when realizing failed")
    inputs: dict[str, float] = Field(default_factory=dict, description="the metrics and parameters used")
    current: dict[str, int] | None = Field(None, description="parallelism per component before (Storm)")
    targets: dict[str, int] | None = Field(None, description="parallelism per component decided (Storm)")


class Move(ApiModel):
    """The last placement move: executors restarted on their planned nodes (each counts as a rescale)."""

    executors: list[str] = Field(default_factory=list, description="executor ids moved")
    wanted: list[str] = Field(default_factory=list, description="executor ids the plan moves")
    reason: str = Field("", max_length=4096, description="what the guards allowed, and why")


class PlacementTraffic(ApiModel):
    """Storm: tuples/s between workers (serialized) and between nodes (over the network), now and under the plan."""

    between_workers: float = Field(..., ge=0)
    between_nodes: float = Field(..., ge=0)
    planned_between_workers: float = Field(..., ge=0)
    planned_between_nodes: float = Field(..., ge=0)


class Placement(ApiModel):
    """Where the app's executors are planned (docs/placement.md). Spark: one plan covers every placed StreamApp,
    nodes are Kubernetes nodes. Storm: a plan per topology, nodes are its supervisors."""

    algorithm: str = Field(..., description="spec.placement of the policy (or elastream when placed apps disagree)")
    executors: dict[str, str] = Field(default_factory=dict, description="executor id -> planned node")
    predicted_peak: dict[str, float] = Field(
        default_factory=dict, description="node -> predicted peak CPU (cores) of all placed executors on it "
        "(Storm: the cores the topology's executors keep busy there, measured)")
    nodes_used: int | None = Field(None, ge=0, description="nodes the whole plan uses")
    traffic: PlacementTraffic | None = Field(None, description="Storm: the tuple traffic the plan cuts")
    message: str = Field("", max_length=4096, description="why nothing moves, or why there is no plan")
    last_move: Move | None = None


class StreamAppStatus(ApiModel):
    phase: Literal["Pending", "Running", "Scaling", "Suspended", "Degraded", "Failed"] | None = None
    observed_generation: int | None = Field(None, ge=0)
    conditions: list[Condition] = Field(default_factory=list, max_length=len(CONDITION_TYPES))
    current_executors: int | None = Field(None, ge=0, description="executors (or workers) running")
    desired_executors: int | None = Field(None, ge=0, description="executors (or workers) wanted")
    parallelism: dict[str, int] | None = Field(
        None, description="parallelism per stage as the job reports it (Spark: executors; Storm: per component)")
    desired_parallelism: dict[str, int] | None = Field(None, description="parallelism per stage decided last")
    latency_p99_seconds: float | None = Field(None, ge=0, description="last observed end-to-end p99 latency")
    selector: str | None = Field(None, description="label selector of the job's pods (scale subresource)")
    last_decision: Decision | None = None
    placement: Placement | None = None
    history: list[Decision] = Field(default_factory=list, max_length=HISTORY_LIMIT, description="most recent decisions, newest last")


class ElasticityPolicyStatus(ApiModel):
    observed_generation: int | None = Field(None, ge=0)
    conditions: list[Condition] = Field(default_factory=list, max_length=len(CONDITION_TYPES))
