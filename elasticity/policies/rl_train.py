"""Training of the `rl` policy in the simulator: cross-entropy-method policy search (docs/rl-policy.md).

Episodes come from training families only — load shapes generated here with training seeds (TRAIN_SEED_BASE and
up), on jobs of random size — never the benchmark's scenarios (elasticity/simulation/scenarios.py) or their
seeds. Each episode runs through the same JobAutoscaler and guards as the benchmark. Its return is

    R = −(w_slo × SLO-violation seconds + w_cost × executor-seconds / N + w_rescale × rescales)

with N the executors the episode's load needs at 100 % busy on average, so a second of executor cost weighs
the same for a job of 3 executors or 300 (REWARD). The fitness of a parameter vector is the summed return over
every training episode per hour of them. CEM keeps a diagonal Gaussian over the parameters, samples a
population, refits to the elite, and returns the best vector it evaluated. Everything is seeded: the same
arguments give the same weights.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from elasticity.config import PolicyConfig
from elasticity.errors import InputError
from elasticity.policies import get_policy
from elasticity.policies.rl import FEATURES, RLPolicy, RLWeights
from elasticity.simulation import loads as L
from elasticity.simulation.job import JobSpec
from elasticity.simulation.runner import run
from elasticity.simulation.scenarios import Scenario, default_job, microbatch_job

TRAIN_SEED_BASE = 70_000  # far from the benchmark's seeds (11-16, 21-24) and its loads' burst seeds
REWARD = {"w_slo": 20.0, "w_cost": 1.0, "w_rescale": 50.0}
TRAIN_DT = 2.0  # seconds per simulated step while training (the benchmark's diurnal day uses 2 s too)
MINUTE = 60.0
NF = len(FEATURES)
# parameter vector: w_more (NF), w_less (NF), then u_more, u_less, scale-down delay as squashed reals
DIM = 2 * NF + 3
U_MORE_RANGE, U_LESS_RANGE, DELAY_RANGE = (0.4, 0.95), (0.5, 0.98), (60.0, 900.0)


# --- training families ------------------------------------------------------------------------------------
def _flash_crowd(rng, level):
    up, long = rng.uniform(15, 40) * MINUTE, rng.uniform(20, 50) * MINUTE
    return L.step(level, level * rng.uniform(1.5, 3.0), up, up + long), up + long + 30 * MINUTE


def _sawtooth(rng, level):
    period, top = rng.uniform(30, 60) * MINUTE, rng.uniform(1.5, 2.5)
    pts, t = [], 0.0
    while t < 120 * MINUTE:
        pts += [(t, level), (t + period - 1.0, level * top)]
        t += period
    return L.ramp(pts), 120 * MINUTE


def _steps(rng, level):
    """Steps up and down (×0.5-1.7) every 15-35 min."""
    changes = np.cumsum(rng.uniform(15, 35, 8) * MINUTE)
    rates = level * np.cumprod(np.r_[1.0, rng.uniform(0.5, 1.7, len(changes))])
    return (lambda t: rates[np.searchsorted(changes, np.asarray(t, dtype=float), side="right")]), 120 * MINUTE


def _sinusoid(rng, level):
    period = rng.uniform(60, 180) * MINUTE
    return L.sinusoid(level, level * rng.uniform(0.2, 0.6), period, rng.uniform(0, 2 * math.pi)), period


def _slow_growth(rng, level):
    d = 120 * MINUTE
    return L.ramp([(0, level), (d, level * rng.uniform(1.5, 3.0))]), d


def _on_off(rng, level):
    d = 90 * MINUTE
    n = rng.integers(2, 6)
    starts, lengths, mult = np.sort(rng.uniform(5 * MINUTE, d, n)), rng.uniform(2, 10, n) * MINUTE, rng.uniform(1.3, 2.0)

    def f(t):
        t = np.asarray(t, dtype=float)
        on = np.zeros_like(t, dtype=bool)
        for s0, ln in zip(starts, lengths):
            on |= (t >= s0) & (t < s0 + ln)
        return np.where(on, level * mult, float(level))
    return f, d


def _web_day(rng, level):
    day = rng.uniform(2, 4) * 60 * MINUTE
    return L.diurnal(level, level * rng.uniform(0.4, 0.7), day, bursts_per_hour=rng.uniform(0.5, 2.0),
                     burst_factor=rng.uniform(1.1, 1.5), seed=int(rng.integers(1 << 30)), duration_s=day), day


def _idle(rng, level):
    """Deployed for a load that has fallen away: the start is over-provisioned (the job is sized at t = 0 for
    ×2-4 the rate that then arrives)."""
    return L.step(level * rng.uniform(2.0, 4.0), level, 0.0 + TRAIN_DT), 90 * MINUTE


FAMILIES: dict[str, Callable] = {
    "flash-crowd": _flash_crowd, "sawtooth": _sawtooth, "steps": _steps, "sinusoid": _sinusoid,
    "slow-growth": _slow_growth, "on-off": _on_off, "web-day": _web_day, "idle": _idle,
}


def training_episode(family: str, seed: int) -> Scenario:
    """One training episode: a load of `family` at a random level (300-8,000 records/s) on a three-stage job
    (or, one time in four, the one-stage micro-batch job), with load noise; all drawn from `seed`."""
    rng = np.random.default_rng(seed)
    level = float(np.exp(rng.uniform(math.log(300), math.log(8000))))
    load, duration = FAMILIES[family](rng, level)
    first = float(load(np.array([0.0]))[0])
    job = microbatch_job(first, name="train-microbatch") if rng.random() < 0.25 else default_job(first, "train")
    return Scenario(f"train:{family}#{seed}", f"training family {family}", duration, load,
                    noise_sd=float(rng.uniform(0.02, 0.1)), dt=TRAIN_DT, seed=seed, job=job)


def training_episodes(seeds: int, families: list[str] | None = None, seed_base: int = TRAIN_SEED_BASE
                      ) -> list[Scenario]:
    names = families or list(FAMILIES)
    unknown = [f for f in names if f not in FAMILIES]
    if unknown:
        raise InputError(f"unknown training families {unknown}; valid: {', '.join(FAMILIES)}")
    return [training_episode(f, seed_base + 1000 * i + k) for k in range(seeds) for i, f in enumerate(names)]


# --- reward -----------------------------------------------------------------------------------------------
def mean_need(job: JobSpec, arrivals: np.ndarray) -> float:
    """Executors the load needs at 100 % busy, averaged over the episode (the unit of executor cost)."""
    rate = float(np.mean(arrivals))
    need = sum(share * rate / st.capacity_per_instance for st, share in zip(job.stages, job.input_shares()))
    return max(need, 1e-9)


def episode_return(summary: dict, need: float, reward: dict = REWARD) -> float:
    return -(reward["w_slo"] * summary["slo_violation_s"] + reward["w_cost"] * summary["executor_seconds"] / need
             + reward["w_rescale"] * summary["rescales"])


# --- parameters <-> weights -------------------------------------------------------------------------------
def _squash(x: float, lo_hi: tuple[float, float]) -> float:
    lo, hi = lo_hi
    return lo + (hi - lo) / (1.0 + math.exp(-float(x)))


def _unsquash(v: float, lo_hi: tuple[float, float]) -> float:
    lo, hi = lo_hi
    f = (v - lo) / (hi - lo)
    return math.log(f / (1.0 - f))


def weights_from(theta: np.ndarray, training: dict | None = None) -> RLWeights:
    return RLWeights(
        w_more=[round(float(x), 6) for x in theta[:NF]],
        w_less=[round(float(x), 6) for x in theta[NF:2 * NF]],
        u_more=round(_squash(theta[2 * NF], U_MORE_RANGE), 6),
        u_less=round(_squash(theta[2 * NF + 1], U_LESS_RANGE), 6),
        scale_down_delay_s=round(_squash(theta[2 * NF + 2], DELAY_RANGE), 3),
        training=training or {},
    )


@dataclass
class Evaluator:
    episodes: list[Scenario]
    config: PolicyConfig

    def __post_init__(self) -> None:
        self.needs = [mean_need(sc.job_spec(), sc.arrivals()) for sc in self.episodes]
        self.hours = sum(sc.duration_s for sc in self.episodes) / 3600.0

    def fitness(self, theta: np.ndarray) -> float:
        """Summed return per hour of training episodes (higher is better)."""
        agent = RLPolicy(weights_from(theta))
        total = 0.0
        for sc, need in zip(self.episodes, self.needs):
            total += episode_return(run(sc, "rl", self.config, agent=agent).summary, need)
        return total / self.hours


# --- a start: imitate a teacher ---------------------------------------------------------------------------
class Imitator:
    """Runs the teacher policy and records, per stage and evaluation, the agent's features and the direction the
    teacher moved (less / same / more) — the data of a warm start."""

    name = "rl"
    required_metrics = RLPolicy.required_metrics

    def __init__(self, teacher: str, looks: RLPolicy) -> None:
        self.teacher, self.looks = get_policy(teacher), looks
        self.features: list[np.ndarray] = []
        self.actions: list[int] = []

    def propose(self, ctx):
        proposal = self.teacher.propose(ctx)
        for view in self.looks.observe(ctx):
            self.features.append(view.features)
            self.actions.append(int(np.sign(proposal.targets.get(view.name, view.p) - view.p)))
        return proposal


def imitation_start(episodes: list[Scenario], teacher: str = "ds2") -> np.ndarray:
    """Parameters whose scores reproduce the teacher's directions as well as a multinomial logistic regression of
    them on the features can (score(a) − score(same) = the log-odds of a against same); sizing at the teacher's
    target utilization 0.7 (more) and 0.85 (less), scale-down delay 600 s (the default)."""
    from sklearn.linear_model import LogisticRegression

    start = np.zeros(DIM)
    start[2 * NF:] = [_unsquash(0.7, U_MORE_RANGE), _unsquash(0.85, U_LESS_RANGE), _unsquash(600.0, DELAY_RANGE)]
    rec = Imitator(teacher, RLPolicy(weights_from(start)))
    for sc in episodes:
        run(sc, "rl", agent=rec)
    X, y = np.array(rec.features), np.array(rec.actions)
    coef = {int(c): np.zeros(NF) for c in set(y)}
    if len(coef) > 1:
        model = LogisticRegression(C=1.0, max_iter=2000, fit_intercept=False).fit(X, y)
        if len(model.classes_) == 2:  # one row: the log-odds of the second class against the first
            coef[int(model.classes_[1])] = model.coef_[0]
        else:
            coef = {int(c): model.coef_[i] for i, c in enumerate(model.classes_)}
    never = -10.0 * np.eye(NF)[0]  # an action the teacher never took: a score that never wins
    same = coef.get(0, np.zeros(NF))
    start[:NF] = coef[1] - same if 1 in coef else never
    start[NF:2 * NF] = coef[-1] - same if -1 in coef else never
    return start


# --- cross-entropy method ---------------------------------------------------------------------------------
def train(seeds: int = 1, iterations: int = 10, population: int = 12, elite: int = 3, seed: int = 0,
          families: list[str] | None = None, teacher: str = "ds2", spread: float = 0.5, progress=None) -> RLWeights:
    """CEM over the policy's parameters on the training episodes, from the imitation of `teacher`, with an initial
    spread of `spread` around it; returns the best weights evaluated."""
    if min(seeds, iterations, population, elite) < 1 or elite > population:
        raise InputError("seeds, iterations, population and elite must be ≥ 1, and elite ≤ population")
    t0 = time.perf_counter()
    episodes = training_episodes(seeds, families)
    ev = Evaluator(episodes, PolicyConfig())
    rng = np.random.default_rng(seed)
    mean, sd = imitation_start(episodes, teacher), np.full(DIM, spread)
    best_theta, best_fit = mean.copy(), ev.fitness(mean)
    start_fit = best_fit
    if progress:
        progress(f"start: imitation of {teacher}, fitness {best_fit:.1f} ({time.perf_counter() - t0:.0f}s)")
    for it in range(iterations):
        pop = mean + sd * rng.standard_normal((population, DIM))
        fits = np.array([ev.fitness(theta) for theta in pop])
        order = np.argsort(-fits, kind="stable")
        if fits[order[0]] > best_fit:
            best_theta, best_fit = pop[order[0]].copy(), float(fits[order[0]])
        top = pop[order[:elite]]
        # refit to the elite, with extra spread that fades, so the search does not collapse early
        mean, sd = top.mean(axis=0), np.sqrt(top.var(axis=0) + spread ** 2 * max(0.0, 1.0 - (it + 1) / iterations))
        if progress:
            progress(f"iteration {it + 1}/{iterations}: best {best_fit:.1f}, population median "
                     f"{float(np.median(fits)):.1f} ({time.perf_counter() - t0:.0f}s)")
    record = {
        "method": "cross-entropy method (diagonal Gaussian), linear policy over scale-free features",
        "families": families or list(FAMILIES), "seeds_per_family": seeds, "seed_base": TRAIN_SEED_BASE,
        "episodes": len(episodes), "episode_hours": round(ev.hours, 3), "iterations": iterations,
        "population": population, "elite": elite, "search_seed": seed, "teacher": teacher, "spread": spread,
        "reward": REWARD, "start_fitness_per_hour": round(start_fit, 3),
        "fitness_per_hour": round(best_fit, 3), "evaluations": 1 + iterations * population,
    }
    return weights_from(best_theta, record)
