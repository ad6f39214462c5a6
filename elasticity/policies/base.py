"""What a policy sees (PolicyContext) and what it proposes (Proposal). Guards turn a proposal into a Decision."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

from elasticity.config import PolicyConfig
from elasticity.model import JobObservation


@dataclass
class PolicyContext:
    observation: JobObservation
    history: list[JobObservation]  # observations inside the metrics window, oldest first, current last
    config: PolicyConfig
    now: float
    memory: dict[str, Any] = field(default_factory=dict)  # JSON-able, persisted between evaluations
    last_rescale_at: float | None = None
    rescale_stall_s: float | None = None  # the engine's measured stall of a rescale (Realizer.realize), if any


@dataclass
class Proposal:
    """Targets per stage (a stage absent = keep), why, and the numbers used. hold=True: the policy cannot
    or will not decide now (e.g. not enough history); the reason says why."""

    targets: dict[str, int]
    reason: str
    inputs: dict[str, float] = field(default_factory=dict)
    hold: bool = False
    # the scale-down delay the policy asks for (used only while PolicyConfig.scale_down_delay_s is unset)
    scale_down_delay_s: float | None = None
    # a scale-out the policy finds urgent (the last rescale left a queue that keeps growing) may come this long
    # after the last rescale instead of the stabilization window
    follow_up_after_s: float | None = None
    # the load asks for more than the bounds allow (the policy's or a stage's max parallelism): the guards hold
    # with reason AtBounds instead of calling the job steady
    at_bounds: bool = False


class Policy(Protocol):
    name: str
    required_metrics: tuple[str, ...]

    def propose(self, ctx: PolicyContext) -> Proposal: ...


def at_bounds_reason(said: list[str], max_bound: bool = True, hot_key: bool = False) -> str:
    """The reason of a proposal the bounds leave short of the load (Proposal.at_bounds), from what each stage says:
    max_bound, a stage at its max parallelism; hot_key, a stage whose hot key no parallelism carries."""
    ends = ["the load falls"] + (["a max rises"] if max_bound else []) + (["the hot key cools"] if hot_key else [])
    until = ", ".join(ends[:-1]) + " or " + ends[-1] if len(ends) > 1 else ends[0]
    return "at the bounds: " + "; ".join(said) + f" (the job falls behind until {until})"


def stage_bound(stage_max: int | None, config: PolicyConfig) -> int:
    """The effective upper bound of a stage: the policy's max and the stage's own (key groups, tasks)."""
    hi = config.max_parallelism
    if stage_max is not None and stage_max > 0:
        hi = min(hi, int(stage_max))
    return max(hi, config.min_parallelism)


def align_to_max_parallelism(p: int, max_parallelism: int | None, upper: int) -> int:
    """Flink's key-group alignment: the smallest p' ≥ p that divides max_parallelism evenly, searched up to
    max_parallelism/2 and `upper`; p unchanged if there is none (or no max parallelism is known)."""
    if not max_parallelism or p <= 0:
        return p
    if p >= max_parallelism:
        return max_parallelism
    for q in range(p, min(max_parallelism // 2, upper) + 1):
        if max_parallelism % q == 0:
            return q
    return p


def ceil_eps(x: float) -> int:
    """ceil that ignores float noise: ceil(24.000000001) = 24."""
    return int(math.ceil(round(x, 9)))
