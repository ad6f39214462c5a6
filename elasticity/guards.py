"""Guards applied to every policy's proposal, in this order:

1. metrics: hold on missing or stale metrics (before the policy runs; see `metrics_problem`); within
   RESCALE_SETTLE_S of a realized rescale the hold is guard "settling" (the job restarts: a Storm rebalance
   restarts its workers), reported as expected, not as a warning
2. bounds: clamp to [min_parallelism, min(max_parallelism, stage max parallelism)]; a proposal the bounds leave
   short of the load (Proposal.at_bounds) is a hold with reason AtBounds
3. step limits: scale_up_max_step / scale_down_max_step per stage and step
4. ineffective scale-up: no scale-up of a stage whose last scale-up did not raise its true rate
5. backlog: no scale-down while a backlog is being caught up
6. scale-down delay: a scale-down happens only once the job has wanted one (of any stage) without a break for
   scale_down_delay_s; then every stage that wants one goes down in the same rescale. Unset, it is 600 s, or
   what the policy's proposal asks for (elastream, for a scale-in its forecast is confident in)
7. stabilization: no rescale within stabilization_window_s of the last one — except a scale-out the policy
   finds urgent (Proposal.follow_up_after_s: the last rescale left a queue that keeps growing), which may come
   that long after it
8. rate limit: at most max_rescales_per_hour realized rescales in any hour
9. advisor mode: decide, never realize
"""
from __future__ import annotations

import math

from elasticity.config import PolicyConfig
from elasticity.model import Decision, JobObservation, fmt_count
from elasticity.policies.base import Proposal, stage_bound
from elasticity.state import AutoscalerState


JOB = "*"  # the scale-down timer is per job: one scale-down rescale takes every stage that wants one
# A job's metrics may be missing this long after a rescale while it restarts (a Storm rebalance: ~20-40 s here);
# longer, and the gap is a fault
RESCALE_SETTLE_S = 120.0


def stabilization_s(proposal: Proposal, targets: dict[str, int], current: dict[str, int], cfg: PolicyConfig
                    ) -> float:
    """How long after the last rescale this one must wait: the stabilization window, or less for a scale-out
    (nothing goes down) the policy finds urgent."""
    follow_up = proposal.follow_up_after_s
    if follow_up is not None and all(t >= current[n] for n, t in targets.items()):
        return min(cfg.stabilization_window_s, follow_up)
    return cfg.stabilization_window_s


def metrics_problem(obs: JobObservation | None, now: float, cfg: PolicyConfig,
                    required: tuple[str, ...], unavailable: str | None = None) -> str | None:
    """Why these metrics cannot be used (None if they can). `unavailable`: why the source had none."""
    if obs is None:
        return f"hold: no metrics ({unavailable})" if unavailable else "hold: no metrics"
    if not obs.stages:
        return "hold: metrics list no stage"
    age = now - obs.timestamp
    if age > cfg.effective_stale_after_s:
        return f"hold: metrics stale for {age:.0f}s (> {cfg.effective_stale_after_s:.0f}s)"
    for s in obs.stages:
        if s.parallelism is None or s.parallelism < 1:
            return f"hold: metrics missing for stage {s.name}: parallelism"
        miss = s.missing(required)
        if miss:
            return f"hold: metrics missing for stage {s.name}: {', '.join(miss)}"
    return None


METRICS_GUARDS = ("metrics", "settling")  # the guards of a hold for want of metrics


def metrics_hold(problem: str, last_rescale_at: float | None, now: float) -> tuple[str, str]:
    """(guard, reason) of a hold for want of metrics: "settling" while the job may still restart after a rescale,
    else "metrics"."""
    if last_rescale_at is not None and 0 <= now - last_rescale_at < RESCALE_SETTLE_S:
        return "settling", f"{problem}, {now - last_rescale_at:.0f} s after a rescale: the job restarts"
    return "metrics", problem


def backlog_catching_up(obs: JobObservation, cfg: PolicyConfig) -> tuple[bool, float, float]:
    """(catching up?, total backlog in records, in seconds of the job's input)."""
    backlog = float(sum(max(s.backlog or 0.0, 0.0) for s in obs.stages))
    rate = obs.source_rate()
    seconds = backlog / rate if rate > 0 else (math.inf if backlog > 0 else 0.0)
    return seconds > cfg.effective_backlog_tolerance_s, backlog, seconds


def scale_down_delay(proposal: Proposal, cfg: PolicyConfig) -> float:
    """The configured delay if the user set one (it applies to every policy alike), else the policy's own
    proposal (elastream's confident scale-in), else the default."""
    if cfg.scale_down_delay_s is not None:
        return cfg.scale_down_delay_s
    if proposal.scale_down_delay_s is not None:
        return proposal.scale_down_delay_s
    return cfg.effective_scale_down_delay_s


def apply_guards(proposal: Proposal, obs: JobObservation, state: AutoscalerState, cfg: PolicyConfig,
                 now: float, policy: str) -> Decision:
    current = obs.parallelism
    inputs = dict(proposal.inputs)

    def decision(action, targets, reason, guard=None):
        return Decision(job=obs.job, timestamp=now, policy=policy, action=action, current=current,
                        targets=dict(targets), reason=reason, inputs=inputs, guard=guard)

    if proposal.hold:
        state.scale_down_since.clear()
        return decision("hold", current, proposal.reason, "policy")

    notes: list[str] = []
    targets: dict[str, int] = {}
    for s in obs.stages:
        p = current[s.name]
        t = int(proposal.targets.get(s.name, p))
        hi = stage_bound(s.max_parallelism, cfg)
        clamped = max(cfg.min_parallelism, min(t, hi))
        if clamped != t:
            notes.append(f"{s.name} clamped {t}→{clamped} to [{cfg.min_parallelism}, {hi}]")
        t = clamped
        if cfg.scale_up_max_step and t > p + cfg.scale_up_max_step:
            notes.append(f"{s.name} scale-up limited to +{cfg.scale_up_max_step}")
            t = p + cfg.scale_up_max_step
        if cfg.scale_down_max_step and t < p - cfg.scale_down_max_step:
            notes.append(f"{s.name} scale-down limited to -{cfg.scale_down_max_step}")
            t = p - cfg.scale_down_max_step
        targets[s.name] = t
    note = f" ({'; '.join(notes)})" if notes else ""

    blocks: list[tuple[str, str]] = []  # (guard, reason)
    # 4. ineffective scale-up
    for name, t in targets.items():
        until = state.ineffective_until.get(name)
        if t > current[name] and until is not None and now < until:
            blocks.append(("ineffective_scale_up", f"hold: scale-up of {name} blocked for {until - now:.0f}s more: "
                           "its last scale-up did not raise its true processing rate"))
            targets[name] = current[name]
    # 5-6. scale-down: backlog, delay (tracked every evaluation, even while other guards hold)
    catching, backlog, backlog_s = backlog_catching_up(obs, cfg)
    inputs["backlog_total"] = round(backlog, 1)
    inputs["backlog_s"] = round(backlog_s, 3) if math.isfinite(backlog_s) else -1.0
    downs = [name for name, t in targets.items() if t < current[name]]
    if not downs:
        state.scale_down_since.pop(JOB, None)
    elif catching:
        state.scale_down_since.pop(JOB, None)
        blocks.append(("backlog", f"hold: no scale-down while a backlog of {fmt_count(backlog)} records "
                       f"({backlog_s:.0f}s of input) is caught up"))
        for name in downs:
            targets[name] = current[name]
    else:
        since = state.scale_down_since.setdefault(JOB, now)
        delay = scale_down_delay(proposal, cfg)
        if now - since < delay:
            blocks.append(("scale_down_delay", f"hold: scale-down of {', '.join(downs)} wanted for "
                           f"{now - since:.0f}s of {delay:.0f}s delay"))
            for name in downs:
                targets[name] = current[name]

    if targets == current:
        if blocks:
            guard, _ = blocks[0]
            reasons = list(dict.fromkeys(r for _, r in blocks))
            return decision("hold", current, "; ".join(reasons) + f" [policy: {proposal.reason}]", guard)
        if proposal.at_bounds:
            return decision("hold", current, proposal.reason + note, "bounds")
        return decision("none", current, proposal.reason + note)

    reason = proposal.reason + note
    if blocks:
        reason += " [" + "; ".join(dict.fromkeys(r for _, r in blocks)) + "]"
    # 7. stabilization
    window = stabilization_s(proposal, targets, current, cfg)
    if state.last_rescale_at is not None and now - state.last_rescale_at < window:
        return decision("hold", targets, f"hold: stabilizing after the rescale {now - state.last_rescale_at:.0f}s "
                        f"ago ({window:.0f}s window) [wanted: {reason}]", "stabilization")
    # 8. rescales per hour
    recent = [t for t in state.rescale_times if now - t < 3600.0]
    if len(recent) >= cfg.max_rescales_per_hour:
        wait = 3600.0 - (now - min(recent)) if recent else 0.0
        return decision("hold", targets, f"hold: {len(recent)} rescales in the last hour (max "
                        f"{cfg.max_rescales_per_hour}); next allowed in {wait:.0f}s [wanted: {reason}]", "rate_limit")
    d = decision("scale", targets, reason)
    # 9. advisor
    if cfg.mode == "advisor":
        d.advisory = True
        d.reason = "advisor: would " + reason
        d.guard = "advisor"
    return d


def move_allowance(wanted: int, state: AutoscalerState, cfg: PolicyConfig, now: float,
                   together: bool = False) -> tuple[int, str | None, str]:
    """How many of `wanted` executor moves (placement) may happen now: each move counts as a rescale, so moves
    wait out the stabilization window, fit in the rescales left this hour, and are only advised in advisor mode.
    `together`: the moves are one reconfiguration (a Storm rebalance lays out every executor at once), which counts
    as one rescale and happens whole or not at all. Returns (allowed, guard or None, why)."""
    if state.last_rescale_at is not None and now - state.last_rescale_at < cfg.stabilization_window_s:
        return 0, "stabilization", (f"stabilizing after the rescale {now - state.last_rescale_at:.0f}s ago "
                                    f"({cfg.stabilization_window_s:.0f}s window)")
    recent = [t for t in state.rescale_times if now - t < 3600.0]
    left = max(0, cfg.max_rescales_per_hour - len(recent))
    if left == 0:
        wait = 3600.0 - (now - min(recent)) if recent else 0.0
        return 0, "rate_limit", (f"{len(recent)} rescales in the last hour (max {cfg.max_rescales_per_hour}); "
                                 f"next allowed in {wait:.0f}s")
    allowed = wanted if together else min(wanted, left)
    limited = f" ({wanted - allowed} wait for the rescale budget)" if allowed < wanted else ""
    how = " in one reconfiguration" if together else ""
    if cfg.mode == "advisor":
        return allowed, "advisor", f"advisor: would move {allowed} executor(s){how}{limited}"
    return allowed, None, f"moving {allowed} executor(s){how}{limited}"


def check_effectiveness(obs: JobObservation, state: AutoscalerState, cfg: PolicyConfig, now: float) -> list[str]:
    """Flink's ineffective-scaling detection: once the stabilization window after a scale-up has passed,
    compare the stage's true processing rate with the one expected (rate before × p1/p0). If it gained less
    than `ineffective_scale_up_threshold` of the expected gain, block its scale-ups for ineffective_block_s.
    Returns the stages found ineffective."""
    found = []
    for name, rec in list(state.pending_effectiveness.items()):
        if now - rec["at"] < cfg.stabilization_window_s:
            continue
        state.pending_effectiveness.pop(name)
        try:
            s = obs.stage(name)
        except KeyError:
            continue
        if s.parallelism != rec["p1"]:
            continue
        rate = s.true_processing_rate()
        if rate is None or (s.utilization() or 0.0) < 0.2:
            continue  # too idle to tell
        expected_gain = rec["rate0"] * (rec["p1"] / rec["p0"] - 1.0)
        gain = rate - rec["rate0"]
        if expected_gain > 0 and gain < cfg.ineffective_scale_up_threshold * expected_gain:
            state.ineffective_until[name] = now + cfg.ineffective_block_s
            found.append(name)
    return found
