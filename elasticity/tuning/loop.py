"""The evaluation loop shared by every optimiser: ask, evaluate, tell, for `budget` evaluations. A configuration
that fails (it cannot start, or falls behind the offered rate) is recorded with why, told to the optimiser as
failed, and never tried again."""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from elasticity.errors import InputError
from elasticity.tuning.space import ConfigSpace


class EvaluationFailed(Exception):
    """The configuration failed (seed 004's FailConf): the message says how."""


@dataclass
class Trial:
    number: int
    config: dict[str, Any]
    value: float | None  # the objective (lower is better); None when it failed
    failed: str | None = None
    seconds: float = 0.0


@dataclass
class TuningResult:
    trials: list[Trial] = field(default_factory=list)

    def best(self) -> Trial | None:
        passed = [t for t in self.trials if t.value is not None]
        return min(passed, key=lambda t: t.value) if passed else None

    def best_so_far(self) -> list[float | None]:
        out, best = [], None
        for t in self.trials:
            if t.value is not None and (best is None or t.value < best):
                best = t.value
            out.append(best)
        return out

    def to_dict(self) -> dict[str, Any]:
        best = self.best()
        return {"trials": [asdict(t) for t in self.trials], "best": asdict(best) if best else None,
                "failed": sum(t.value is None for t in self.trials)}


def tune(objective: Callable[[dict[str, Any]], float], space: ConfigSpace, optimizer, budget: int,
         on_trial: Callable[[Trial, TuningResult], None] | None = None,
         result: TuningResult | None = None) -> TuningResult:
    """Run `budget` evaluations of `objective` (raises EvaluationFailed for a failed configuration). The trials go
    into `result` as they end, so a caller that passes one keeps them when a run is interrupted."""
    if budget < 1:
        raise InputError(f"budget: at least 1 evaluation, not {budget}")
    result = result if result is not None else TuningResult()
    for number in range(1, budget + 1):
        try:
            config = optimizer.ask()
        except LookupError:  # the space is exhausted
            break
        space.check(config)
        t0 = time.monotonic()
        try:
            value, failed = float(objective(config)), None
        except EvaluationFailed as err:
            value, failed = None, str(err) or "failed"
        if value is not None and not math.isfinite(value):
            value, failed = None, f"the objective was {value}"
        trial = Trial(number, config, value, failed, round(time.monotonic() - t0, 3))
        optimizer.tell(config, value)
        result.trials.append(trial)
        if on_trial is not None:
            on_trial(trial, result)
    return result
