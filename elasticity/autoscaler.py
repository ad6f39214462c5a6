"""The one entry point: JobAutoscaler.evaluate(observation) -> Decision, and scale() through the ports.

evaluate() validates the metrics, keeps the metrics window, lets the policy propose and the guards decide.
scale() reads the MetricsSource, evaluates, realizes through the Realizer (unless advisor mode or a hold),
records the rescale in the StateStore and reports to the EventSink, all timed by the Clock.
"""
from __future__ import annotations

import logging

from elasticity.config import PolicyConfig
from elasticity.guards import apply_guards, check_effectiveness, metrics_hold, metrics_problem, move_allowance
from elasticity.model import Decision, JobObservation
from elasticity.policies import get_policy
from elasticity.policies.base import Policy, PolicyContext
from elasticity.ports import Clock, Event, EventSink, MetricsSource, MetricsUnavailable, Mover, Realizer, StateStore
from elasticity.state import AutoscalerState

log = logging.getLogger(__name__)


class JobAutoscaler:
    def __init__(
        self,
        job: str,
        config: PolicyConfig | None = None,
        *,
        metrics: MetricsSource | None = None,
        realizer: Realizer | None = None,
        store: StateStore | None = None,
        events: EventSink | None = None,
        clock: Clock | None = None,
        policy: Policy | None = None,
    ) -> None:
        from elasticity.adapters import InMemoryStateStore, ListEventSink, SystemClock

        self.job = job
        self.config = config or PolicyConfig()
        self.policy = policy or get_policy(self.config.algorithm)
        self.metrics = metrics
        self.realizer = realizer
        self.store = store or InMemoryStateStore()
        self.events = events or ListEventSink()
        self.clock = clock or SystemClock()
        self.state = AutoscalerState.from_dict(self.store.load(job))

    # --- pure decision ---------------------------------------------------------------------------------
    def evaluate(self, observation: JobObservation | None, now: float | None = None,
                 unavailable: str | None = None) -> Decision:
        """Decide for one observation. Updates the in-memory state (window, pending scale-downs), realizes nothing.
        `unavailable`: why there is no observation (the source's MetricsUnavailable), for the hold's reason."""
        cfg = self.config
        now = self.clock.now() if now is None else float(now)
        st = self.state
        problem = metrics_problem(observation, now, cfg, self.policy.required_metrics, unavailable)
        if problem:
            st.scale_down_since.clear()  # stale or missing metrics never count towards a scale-down
            current = observation.parallelism if observation is not None and observation.stages else {}
            guard, reason = metrics_hold(problem, st.last_rescale_at, now)
            d = Decision(job=self.job, timestamp=now, policy=self.policy.name, action="hold", current=current,
                         targets=dict(current), reason=reason, guard=guard)
            st.last_decision = d.to_dict()
            return d
        assert observation is not None
        # the metrics window (one observation per timestamp)
        st.history = [h for h in st.history if now - h["timestamp"] <= cfg.metrics_window_s
                      and h["timestamp"] < observation.timestamp]
        st.history.append(observation.to_dict())
        check_effectiveness(observation, st, cfg, now)
        ctx = PolicyContext(observation=observation, history=st.observations(), config=cfg, now=now,
                            memory=st.policy_memory.setdefault(self.policy.name, {}),
                            last_rescale_at=st.last_rescale_at, rescale_stall_s=st.rescale_stall_s)
        proposal = self.policy.propose(ctx)
        d = apply_guards(proposal, observation, st, cfg, now, self.policy.name)
        st.last_decision = d.to_dict()
        return d

    def record_rescale(self, decision: Decision, observation: JobObservation) -> None:
        """Remember a realized rescale (for stabilization, rate limit, scale-down delay, effectiveness)."""
        st = self.state
        now = decision.timestamp
        self._count_rescales(now, 1)
        if any(t < decision.current.get(n, t) for n, t in decision.targets.items()):
            st.scale_down_since.clear()
        for name, t in decision.targets.items():
            p0 = decision.current.get(name, t)
            if t > p0:
                rate0 = observation.stage(name).true_processing_rate()
                if rate0:
                    st.pending_effectiveness[name] = {"p0": p0, "p1": t, "rate0": rate0, "at": now}
            elif t < p0:
                st.ineffective_until.pop(name, None)
                st.pending_effectiveness.pop(name, None)
        # the window saw the old parallelism; keep it only for the rate history (policies filter by parallelism)

    def _count_rescales(self, now: float, n: int) -> None:
        """n realized rescales now: the stabilization window restarts, the hour's budget shrinks."""
        self.state.last_rescale_at = now
        self.state.rescale_times = [t for t in self.state.rescale_times if now - t < 3600.0] + [now] * n

    # --- through the ports -----------------------------------------------------------------------------
    def override(self, targets: dict[str, int], reason: str, current: dict[str, int] | None = None) -> Decision:
        """Realize a parallelism someone set by hand (kubectl scale), outside the policy: through the Realizer,
        recorded as a rescale (the stabilization window starts now), saved, reported as ManualOverride.
        `current` is what the job runs (default: what the metrics say). If realizing fails the decision is a hold
        whose targets are the current parallelism, so the caller sees nothing changed and can try again."""
        if self.realizer is None:
            raise RuntimeError("JobAutoscaler.override() needs a Realizer")
        obs = self._observe()[0] if self.metrics is not None else None
        if current is None:
            current = obs.parallelism if obs is not None and obs.stages else targets
        d = Decision(job=self.job, timestamp=self.clock.now(), policy="manual", action="scale",
                     current=dict(current), targets=dict(targets), reason=reason, guard="manual")
        try:
            self.realizer.realize(self.job, d)
        except Exception as err:  # report; nothing changed
            log.warning("manual override of %s failed: %s", self.job, err)
            d.action, d.guard, d.targets = "hold", "realize_failed", dict(current)
            d.reason = f"hold: manual override failed ({err}) [wanted: {reason}]"
            self._remember(d, Event("Warning", "RescaleFailed", d.reason, d.to_dict()))
            return d
        if obs is not None:
            self.record_rescale(d, obs)
        self._remember(d, Event("Normal", "ManualOverride", d.reason, d.to_dict()))
        return d

    def move(self, executors: list[str], why: str, mover: Mover, together: bool = False) -> dict:
        """Move executors where the placement plan wants them, under the scaling guards: each move counts as a
        rescale (stabilization window, rescales per hour), advisor mode only reports; `together`: all in one
        reconfiguration, which counts as one rescale. Returns {"wanted", "moved", "guard", "reason"}; saves the
        state and reports an event when something happens."""
        now = self.clock.now()
        allowed, guard, reason = move_allowance(len(executors), self.state, self.config, now, together)
        result = {"wanted": list(executors), "moved": [], "guard": guard, "reason": f"{reason}: {why}"}
        if allowed == 0 or guard == "advisor":
            if guard == "advisor":
                self.events.emit(self.job, Event("Normal", "MoveAdvised", result["reason"]))
            return result
        try:
            moved = mover.move(self.job, executors[:allowed])
        except Exception as err:  # report; nothing moved
            log.warning("moving executors of %s failed: %s", self.job, err)
            result.update(guard="realize_failed", reason=f"moving executors failed ({err}): {why}")
            self.events.emit(self.job, Event("Warning", "MoveFailed", result["reason"]))
            return result
        if moved:
            self._count_rescales(now, 1 if together else len(moved))
            self._save()
            self.events.emit(self.job, Event("Normal", "ExecutorsMoved", f"moved {', '.join(moved)}: {why}"))
        result["moved"] = moved
        return result

    def _remember(self, d: Decision, event: Event) -> None:
        self.state.last_decision = d.to_dict()
        self._save()
        self.events.emit(self.job, event)

    def scale(self) -> Decision:
        """Observe, decide, realize (auto mode), persist, report. Returns the decision."""
        if self.metrics is None:
            raise RuntimeError("JobAutoscaler.scale() needs a MetricsSource")
        now = self.clock.now()
        obs, unavailable = self._observe()
        previous = self.state.last_decision
        d = self.evaluate(obs, now, unavailable)
        if d.realize:
            if self.realizer is None:
                raise RuntimeError("JobAutoscaler.scale() needs a Realizer in auto mode")
            try:
                stall = self.realizer.realize(self.job, d)
            except Exception as err:  # report, keep the old state: nothing changed
                log.warning("rescale of %s failed: %s", self.job, err)
                d.action, d.guard = "hold", "realize_failed"
                d.reason = f"hold: rescale failed ({err}) [wanted: {d.reason}]"
                self.state.last_decision = d.to_dict()
                self.events.emit(self.job, Event("Warning", "RescaleFailed", d.reason, d.to_dict()))
                self._save()
                return d
            assert obs is not None
            self.record_rescale(d, obs)
            if isinstance(stall, (int, float)) and stall >= 0:
                self.state.rescale_stall_s = float(stall)
            self.events.emit(self.job, Event("Normal", "Rescaled", d.reason, d.to_dict()))
        elif d.changed and d.advisory:
            self.events.emit(self.job, Event("Normal", "RescaleAdvised", d.reason, d.to_dict()))
        elif d.hold and (previous is None or previous.get("guard") != d.guard):
            kind = "Warning" if d.guard in ("metrics", "ineffective_scale_up", "bounds") else "Normal"
            self.events.emit(self.job, Event(kind, _event_reason(d), d.reason, d.to_dict()))
        self._save()
        return d

    def _observe(self) -> tuple[JobObservation | None, str | None]:
        """(the observation, why there is none)."""
        try:
            return self.metrics.observe(self.job), None
        except MetricsUnavailable as err:
            return None, str(err) or type(err).__name__

    def _save(self) -> None:
        self.store.save(self.job, self.state.to_dict())


# The CamelCase reason of each guard, for Kubernetes events and status conditions alike.
GUARD_REASONS = {
    "metrics": "MetricsUnavailable",
    "settling": "AwaitingMetrics",
    "stabilization": "Stabilizing",
    "rate_limit": "RescaleRateLimited",
    "scale_down_delay": "ScaleDownDelayed",
    "backlog": "CatchingUp",
    "ineffective_scale_up": "IneffectiveScaleUp",
    "realize_failed": "RescaleFailed",
    "bounds": "AtBounds",
    "policy": "Holding",
}


def _event_reason(d: Decision) -> str:
    return GUARD_REASONS.get(d.guard or "", "Holding")
