"""elastream's capacity model (micro-batch overhead), confident scale-in, burst coverage, and the guards'
scale-down delay: the user's value applies to every policy alike."""
import numpy as np
import pytest

from elasticity.adapters import InMemoryStateStore, ListEventSink, ManualClock, RecordingRealizer, StaticMetricsSource
from elasticity.autoscaler import JobAutoscaler
from elasticity.config import PolicyConfig
from elasticity.guards import scale_down_delay
from elasticity.model import JobObservation, StageMetrics
from elasticity.policies.base import PolicyContext, Proposal
from elasticity.policies.capacity import CapacityEstimate, capacity_fit, estimate_capacity
from elasticity.policies.elastream import ElastreamPolicy
from elasticity.policies.rates import target_rates
from elasticity.simulation.job import JobSpec, SimulatedJob, StageSpec
from elasticity.simulation.runner import run
from elasticity.simulation.scenarios import builtin
from tests.unit.elasticity.helpers import obs, stage


def spark(t, rate, p=4, overhead=0.7, per_record=0.0024):
    """The runner's one stage "executors": busy = overhead/trigger + per-record cost × records/s per executor."""
    busy = overhead + per_record * rate / p
    return JobObservation("j", t, [StageMetrics("executors", parallelism=p, input_rate=rate, processing_rate=rate,
                                                busy_fraction=busy, max_parallelism=48)],
                          latency_p99_s=1.5, latency_avg_s=1.0)


def test_capacity_regression_recovers_the_fixed_batch_overhead():
    x = np.linspace(50, 100, 12)
    a, b = capacity_fit(x, 0.7 + 0.0024 * x)
    assert a == pytest.approx(0.7) and b == pytest.approx(0.0024)
    assert capacity_fit(np.full(12, 75.0), np.full(12, 0.88)) is None  # no spread: a and b cannot be told apart
    pts = [[i, xi, 0.7 + 0.0024 * xi, 4, 4.0, 0.0] for i, xi in enumerate(x)]
    est = estimate_capacity(pts, 4, fallback=75 / 0.88)
    assert est.method == "regression" and est.value == pytest.approx(0.3 / 0.0024)
    assert est.overhead == pytest.approx(0.7)


def test_micro_batch_bias_prevents_scale_in_and_the_regression_allows_it():
    # 4 executors; the load moved between 200 and 400 records/s and is now 300: busy 88 % (0.7 + 0.18).
    # DS2's true rate 300/0.88 = 341/s says 4 executors are needed at 88 %; the true capacity of one executor
    # is (1 − 0.7)/0.0024 = 125/s, so 3 carry 300/s at 80 %.
    hist = [spark(30.0 * i, 200 + 200 * (i % 5) / 4) for i in range(20)] + [spark(30.0 * (20 + i), 300) for i in range(8)]

    def last(cfg):
        pol, mem, d = ElastreamPolicy(), {}, None
        for k, o in enumerate(hist):
            d = pol.propose(PolicyContext(o, hist[max(0, k - 9):k + 1], cfg, now=o.timestamp, memory=mem))
        return d

    # one executor of four is a 25 % saving: the min saving set to allow it, so the capacity estimate decides
    biased = last(PolicyConfig(elastream_capacity_regression=False, elastream_min_saving=0.25))
    assert biased.targets == {"executors": 4} and biased.reason.startswith("steady")
    fixed = last(PolicyConfig(elastream_min_saving=0.25))
    assert fixed.targets["executors"] == 3 and "scale in executors 4→3" in fixed.reason
    assert fixed.inputs["executors.batch_overhead_fraction"] == pytest.approx(0.7, abs=0.01)


def test_simulated_micro_batch_stage_reports_a_busy_fraction_with_its_fixed_overhead():
    st = StageSpec("executors", service_rate=500.0, key_groups=64, trigger_interval_s=1.0, batch_overhead_s=0.5,
                   initial_parallelism=4)
    job = SimulatedJob(JobSpec("j", [st], capacity_noise=0.0, warmup_s=0), np.full(60, 300.0), metrics_window_s=30)
    for _ in range(30):
        job.step()
    s = job.observe().stages[0]
    assert s.busy_fraction == pytest.approx(0.5 + 300 / 2000)  # not 300 / (4 × 250) = 30 %
    assert s.batch_duration_s == pytest.approx(0.65) and s.trigger_interval_s == 1.0
    assert st.capacity_per_instance == 250.0


def test_downstream_covers_what_its_upstream_is_planned_to_pass_on():
    src = stage("src", p=4, rate=1000, proc=1000, busy=0.5, maxp=360)  # 500/s per instance, 2000/s at full speed
    mid = stage("map", p=20, rate=1000, proc=1000, busy=0.5, upstream=["src"], maxp=360)  # 100/s per instance
    o = obs(src, mid, t=0.0)
    rates = {r.name: r for r in target_rates(o)}
    caps = {"src": CapacityEstimate(500.0, "ds2"), "map": CapacityEstimate(100.0, "ds2")}

    def plan(coverage):
        return ElastreamPolicy._plan(o, rates, caps, PolicyConfig(elastream_burst_coverage=coverage), 0.9,
                                     lambda s: 1, lambda s: 360)
    assert plan(0.0) == {"src": 3, "map": 12}  # 1000/0.9 = 1111/s: 2.2 → 3 × 500, 11.1 → 12 × 100
    # 1.3 × the 1111/s the source is planned for: 14.4 → 15; not 1.3 × the 1500/s its three instances can emit (20)
    assert plan(1.3)["map"] == 15


def test_downstream_of_a_surge_gets_the_surge_coverage():
    # the source's queue is 6 s of its rate, over the 5 s latency target: it drains at 200/s more (6000/30 s), and
    # the stages after it carry that with 10 % spare, not 5 %, to drain their share of the step before the next one
    def plan(backlog, coverage=0.05 + 1.0):
        src = stage("src", p=4, rate=1000, proc=1000, busy=0.5, backlog=backlog, maxp=360)
        mid = stage("map", p=20, rate=1000, proc=1000, busy=0.5, upstream=["src"], maxp=360)
        o = obs(src, mid, t=0.0)
        rates = {r.name: r for r in target_rates(o)}
        caps = {"src": CapacityEstimate(500.0, "ds2"), "map": CapacityEstimate(100.0, "ds2")}
        return ElastreamPolicy._plan(o, rates, caps, PolicyConfig(elastream_burst_coverage=coverage), 0.9,
                                     lambda s: 1, lambda s: 360)
    assert plan(4000) == {"src": 3, "map": 12}  # 4 s queued: 1.05 × (1111 + 4000/300) = 1180/s → 11.8 → 12
    assert plan(6000) == {"src": 3, "map": 15}  # 6 s queued: 1.1 × (1111 + 200) = 1442/s → 15, not 1.05 × → 14
    assert plan(6000, coverage=1.15)["map"] == 16  # a higher coverage set by the user stays: 1.15 × 1311 → 15.1 → 16
    assert plan(6000, coverage=0.0)["map"] == 12  # no coverage at all stays none: the map's own 1111/s


def test_confident_scale_in_asks_for_a_shorter_delay_and_the_user_value_wins():
    cfg = PolicyConfig()
    assert cfg.scale_down_delay_s is None and cfg.effective_scale_down_delay_s == 600.0
    p = Proposal({"s": 1}, "x", scale_down_delay_s=120.0)
    assert scale_down_delay(p, cfg) == 120.0
    assert scale_down_delay(Proposal({"s": 1}, "x"), cfg) == 600.0
    assert scale_down_delay(p, PolicyConfig(scale_down_delay_s=900)) == 900.0  # set by the user: for every policy


def test_elastream_scales_in_an_over_provisioned_steady_job_after_the_confident_delay():
    clock, src = ManualClock(0.0), StaticMetricsSource()
    a = JobAutoscaler("j", PolicyConfig(), metrics=src, realizer=RecordingRealizer(), store=InMemoryStateStore(),
                      events=ListEventSink(), clock=clock)
    rng = np.random.default_rng(1)
    first = None
    for i in range(1, 30):
        clock.t = 30.0 * i
        rate = 1000 * (1 + 0.02 * rng.standard_normal())
        src.observation = obs(stage("src", p=20, rate=rate, busy=rate / 2000, maxp=360), t=clock.t)
        d = a.scale()
        if d.action == "scale":
            first = d
            break
    assert first is not None and first.targets["src"] < 20
    assert first.timestamp <= 6 * 30 + 120 + 30  # established forecast (6 scrapes) + 120 s, not 600 s
    b = JobAutoscaler("k", PolicyConfig(scale_down_delay_s=600), metrics=src, realizer=RecordingRealizer(),
                      clock=ManualClock(0.0))
    for i in range(1, 20):
        b.clock.t = 30.0 * i
        src.observation = obs(stage("src", p=20, rate=1000, busy=0.5, maxp=360), t=b.clock.t)
        assert b.scale().action != "scale"  # the user's 600 s applies to elastream too


def test_micro_batch_scenario_elastream_beats_the_biased_ds2():
    sc = builtin()["microbatch"]
    e, d = run(sc, "elastream").summary, run(sc, "ds2").summary
    assert e["slo_violation_s"] <= d["slo_violation_s"]
    assert e["executor_seconds"] < 0.6 * d["executor_seconds"]


def test_simulate_seed_zero_is_a_seed_and_none_is_the_scenario_seed():
    sc = builtin()["stationary"]
    assert np.array_equal(sc.arrivals(None), sc.arrivals(sc.seed))
    assert not np.array_equal(sc.arrivals(0), sc.arrivals(None))


def test_a_saturated_stage_does_not_fit_a_capacity_of_billions():
    # flash-crowd-1's enrich stage (scrapes as [t, x = processed/p, busy, p, eff, flat out]): 17 instances at 100/s,
    # then 64 over 60 key groups, flat out at 140/s for 18 minutes (busy capped at 60/64), then the crowd's end.
    # The flat-out cluster fit busy ≈ 0.9375 + 0·x: a capacity (1 − a)/b of 5·10^13 in the run (a scale-in to 1
    # instance), 500/s on these rounded scrapes
    before = [[2190.0 + 30 * i, x, b, 17, 16.364, 0.0] for i, (x, b) in enumerate(
        [(103.3, 0.692), (101.2, 0.675), (104.5, 0.694), (103.5, 0.689)])] + [[2370.0, 150.0, 1.0, 15, 15.0, 1.0]]
    flat = [[2460.0 + 30 * i, 140.0 + 0.3 * (i % 5), 0.937 + 0.001 * (i % 2), 64, 60.0, 1.0] for i in range(36)]
    after = [[3540.0 + 30 * i, x, b, 64, 60.0, 0.0] for i, (x, b) in enumerate(
        [(136, 0.905), (135, 0.906), (136, 0.906), (135, 0.902), (133, 0.888), (136, 0.905), (129, 0.86),
         (136, 0.898), (137, 0.909), (136, 0.903), (135, 0.91), (133, 0.878), (134, 0.889), (139, 0.921),
         (107, 0.712), (28, 0.188), (28, 0.186), (27, 0.18)])]
    est = estimate_capacity(before + flat + after, 64, fallback=150.0)
    assert est.value < 300.0, (est.method, est.value)
    # and where the regression may speak (a fixed cost per batch), it extrapolates no further than 3 × what it saw
    x = np.linspace(10, 20, 12)
    far = estimate_capacity([[i, xi, 0.5 + 0.001 * xi, 4, 4.0, 0.0] for i, xi in enumerate(x)], 4, fallback=20.0)
    assert far.method != "regression" and far.value < 60.0, (far.method, far.value)
