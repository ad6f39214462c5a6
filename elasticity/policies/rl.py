"""`rl`: a learned agent (seed 003, Liu): per stage it observes load, backlog, latency and trend and turns a knob —
more, same or less — for the reward of elasticity: few SLO-violation seconds, few executor-seconds, few rescales.

The agent is a linear policy over scale-free features (docs/rl-policy.md): score(a) = w_a · φ(stage), with
score(same) = 0; the highest score wins. A step is sized from the load, not counted in instances, so one
step is right for a job of 3 executors or 300:
  more: the least parallelism (at least one more) that carries the stage's target input rate, plus its backlog
        within BACKLOG_DRAIN_S, at utilization u_more;
  less: the least parallelism (at least one fewer, at most max_scale_down_factor fewer) that carries the
        target input rate at utilization u_less.
w_more, w_less, u_more, u_less and the scale-down delay it asks for are learned in the simulator by
`elastream train-rl` (elasticity/policies/rl_train.py) and shipped in rl_weights.json: no training at run time.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from elasticity.errors import InputError
from elasticity.model import JobObservation, StageMetrics, fmt_rate
from elasticity.policies.base import PolicyContext, Proposal, ceil_eps, stage_bound
from elasticity.policies.capacity import effective_parallelism, least_parallelism, track_capacities
from elasticity.policies.rates import target_rates

WEIGHTS_PATH = Path(__file__).with_name("rl_weights.json")
ACTIONS = ("less", "same", "more")
FEATURES = ("bias", "load", "backlog", "latency", "trend", "settled", "saving", "growth")
BACKLOG_DRAIN_S = 120.0  # a scale-out sizes for draining the queue within this: every queued second counts
CAPACITY_POINTS = 20  # scrapes kept per stage to estimate its capacity (10 min at 30 s: enough for the regression)


@dataclass
class RLWeights:
    """The agent's learned parameters (and how they were learned, for the record)."""

    w_more: list[float]
    w_less: list[float]
    u_more: float  # utilization a "more" step sizes for
    u_less: float  # utilization a "less" step sizes for
    scale_down_delay_s: float  # how long a "less" must be wanted before the guards let it through
    training: dict = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path = WEIGHTS_PATH) -> "RLWeights":
        try:
            d = json.loads(Path(path).read_text())
        except (OSError, ValueError) as err:
            raise InputError(f"{path}: cannot read the rl policy's weights: {err}") from None
        if d.get("features") != list(FEATURES):
            raise InputError(f"{path}: weights for features {d.get('features')}, this policy uses {list(FEATURES)}")
        return cls(d["w_more"], d["w_less"], d["u_more"], d["u_less"], d["scale_down_delay_s"], d.get("training", {}))

    def save(self, path: str | Path) -> None:
        d = {"features": list(FEATURES), "actions": list(ACTIONS), **asdict(self)}
        Path(path).write_text(json.dumps(d, indent=1, allow_nan=False) + "\n")  # NaN weights: refuse, not write


@dataclass
class StageView:
    """One stage as the agent sees it: its features, and where each step would take it."""

    name: str
    p: int
    features: np.ndarray
    p_more: int
    p_less: int
    target_rate: float
    capacity: float  # records/s at 100 % busy with the current parallelism


class RLPolicy:
    name = "rl"
    required_metrics = ("input_rate", "processing_rate", "utilization")

    def __init__(self, weights: RLWeights | None = None) -> None:
        self.weights = weights or RLWeights.load()
        self._w = {"more": np.asarray(self.weights.w_more, float), "less": np.asarray(self.weights.w_less, float)}

    def propose(self, ctx: PolicyContext) -> Proposal:
        targets, parts, inputs = dict(ctx.observation.parallelism), [], {}
        for view in self.observe(ctx):
            scores = self.scores(view.features)
            action = max(ACTIONS, key=lambda a: (scores[a], a == "same"))  # a tie keeps the parallelism
            new = {"more": view.p_more, "less": view.p_less}.get(action, view.p)
            if new == view.p:
                action = "same"  # no step left that way (a bound)
            targets[view.name] = new
            inputs.update({f"{view.name}.{f}": round(float(x), 4) for f, x in zip(FEATURES[1:], view.features[1:])})
            inputs.update({f"{view.name}.score_{a}": round(scores[a], 4) for a in ("more", "less")})
            parts.append(self.explain(view, action, new, scores))
        changed = [t for t in parts if not t.startswith("same ")]
        reason = "rl: " + "; ".join(changed or ["same for every stage (" + "; ".join(parts) + ")"])
        return Proposal(targets, reason, inputs, scale_down_delay_s=self.weights.scale_down_delay_s)

    def scores(self, features: np.ndarray) -> dict[str, float]:
        return {"more": float(self._w["more"] @ features), "same": 0.0, "less": float(self._w["less"] @ features)}

    # --- what the agent sees --------------------------------------------------------------------------------
    def observe(self, ctx: PolicyContext) -> list[StageView]:
        cfg, obs = ctx.config, ctx.observation
        caps = track_capacities(ctx, CAPACITY_POINTS, hot_key=False)  # rl's features read the mean, as trained
        trends = input_trends(ctx.history, obs)
        settled = 1.0 if ctx.last_rescale_at is None or cfg.stabilization_window_s <= 0 else \
            min((ctx.now - ctx.last_rescale_at) / cfg.stabilization_window_s, 1.0)
        latency = min((obs.latency_p99_s or 0.0) / cfg.latency_target_s, 5.0)
        views = []
        for st, sr in zip(obs.stages, target_rates(obs)):
            per_instance = caps[st.name].value
            capacity = per_instance * effective_parallelism(sr.parallelism, st.max_parallelism)
            rate = sr.target_input_rate
            load = rate / capacity if capacity > 0 else (st.utilization() or 0.0)
            backlog_s = sr.backlog / rate if rate > 0 else (0.0 if sr.backlog <= 0 else 5 * cfg.latency_target_s)
            p_more, p_less = self.steps(st, per_instance, rate, sr.backlog, ctx)
            p = sr.parallelism
            features = np.array([
                1.0,
                min(load, 3.0),
                min(backlog_s / cfg.latency_target_s, 5.0),
                latency,
                trends.get(st.name, 0.0),
                settled,
                (p - p_less) / p,
                min((p_more - p) / p, 3.0),
            ])
            views.append(StageView(st.name, p, features, p_more, p_less, rate, capacity))
        return views

    def steps(self, st: StageMetrics, per_instance: float, rate: float, backlog: float, ctx: PolicyContext
              ) -> tuple[int, int]:
        """(parallelism after one step "more", after one step "less"), sized from the load, within the bounds."""
        cfg, p = ctx.config, int(st.parallelism)
        hi = max(stage_bound(st.max_parallelism, cfg), p)
        lo = min(max(cfg.min_parallelism, ceil_eps(p * (1.0 - cfg.max_scale_down_factor))), p)
        if per_instance <= 0:  # nothing measured yet: one instance either way
            return min(p + 1, hi), max(p - 1, lo)
        more_need = (rate + backlog / BACKLOG_DRAIN_S) / self.weights.u_more
        p_more = _least_or_hi(more_need, per_instance, st.max_parallelism, min(p + 1, hi), hi)
        p_less = _least_or_hi(rate / self.weights.u_less, per_instance, st.max_parallelism, lo, p)
        return p_more, min(p_less, max(p - 1, lo))

    @staticmethod
    def explain(view: StageView, action: str, new: int, scores: dict[str, float]) -> str:
        f = dict(zip(FEATURES, view.features))
        why = (f"load {f['load']:.0%} of capacity {fmt_rate(view.capacity)}, backlog {f['backlog']:.2f}× and "
               f"p99 {f['latency']:.2f}× the latency target, trend {f['trend']:+.0%}")
        q = ", ".join(f"{a}={scores[a]:+.2f}" for a in ("more", "same", "less"))
        if action == "same":
            return f"same {view.name} at {view.p} (scores {q})"
        word = "more instances" if action == "more" else "fewer instances"
        return f"{action} for {view.name}: {word} {view.p}→{new} (scores {q}): {why}"


def input_trends(history: list[JobObservation], obs: JobObservation) -> dict[str, float]:
    """Per stage, the relative change of its input rate over the metrics window, in [−1, 1]."""
    if not history:
        return {}
    oldest = {s.name: float(s.input_rate or 0.0) for s in history[0].stages}
    out = {}
    for s in obs.stages:
        now, then = float(s.input_rate or 0.0), oldest.get(s.name, 0.0)
        top = max(now, then)
        out[s.name] = (now - then) / top if top > 0 and math.isfinite(top) else 0.0
    return out


def _least_or_hi(need: float, per_instance: float, key_groups: int | None, lo: int, hi: int) -> int:
    """`least_parallelism`, or hi when nothing in [lo, hi] carries `need` — the steps rl's weights were trained on
    (least_parallelism then gives the least p carrying what hi does)."""
    p = least_parallelism(need, per_instance, key_groups, lo, hi)
    return p if per_instance * effective_parallelism(p, key_groups) >= need - 1e-9 else hi
