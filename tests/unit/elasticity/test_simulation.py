import argparse
import json

import numpy as np
import pytest

from elasticity.config import PolicyConfig
from elasticity.errors import InputError
from elasticity.policies.capacity import effective_parallelism, least_parallelism
from elasticity.policies.elastream import ElastreamPolicy
from elasticity.policies.forecast import RateForecast
from elasticity.policies.base import PolicyContext
from elasticity.simulation import loads as L
from elasticity.simulation.cli import simulate_main
from elasticity.simulation.job import JobSpec, SimulatedJob, StageSpec
from elasticity.simulation.runner import run
from elasticity.simulation.scenarios import Scenario, builtin, default_job, get_scenario
from tests.unit.elasticity.helpers import obs, stage


# --- loads and traces -----------------------------------------------------------------------------------
def test_generators():
    t = np.arange(0, 100.0)
    assert np.all(L.constant(5)(t) == 5)
    s = L.step(1, 9, 10, 20)(t)
    assert s[9] == 1 and s[10] == 9 and s[19] == 9 and s[20] == 1
    w = L.sinusoid(10, 2, 40)(t)
    assert w.max() == pytest.approx(12, abs=0.01) and w.min() == pytest.approx(8, abs=0.01)
    r = L.ramp([(0, 0), (50, 100)])(t)
    assert r[25] == pytest.approx(50) and r[99] == 100
    d = L.diurnal(100, 50, 100, bursts_per_hour=0, seed=1)(t)
    assert d.min() >= 0 and d.max() > d.min()
    n = L.noisy(np.full(20000, 100.0), 0.1, seed=1)
    assert abs(n.mean() - 100) < 1 and 8 < n.std() < 12 and n.min() >= 0
    assert np.array_equal(L.noisy(np.full(10, 1.0), 0.1, seed=5), L.noisy(np.full(10, 1.0), 0.1, seed=5))


def test_trace_reader_accepts_well_formed_csv(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("# a comment\nTime, Rate\n100,10\n\n160,30.5\n220,0\n")
    tr = L.read_trace(f)
    assert list(tr.times) == [0, 60, 120] and tr(30.0) == pytest.approx(20.25)
    g = tmp_path / "iso.csv"
    g.write_text("rate,time\n5,2024-01-01T00:00:00Z\n7,2024-01-01T00:01:00Z\n")
    assert list(L.read_trace(g).times) == [0, 60]


@pytest.mark.parametrize("body,message", [
    ("time,rate\n0,1\n5,-2\n", ":3: rate -2 is negative"),
    ("time,rate\n0,1\n5,x\n", ":3: rate 'x' is not a number"),
    ("time,rate\n0,1\nsoon,2\n", ":3: time 'soon' is not a number"),
    ("time,rate\n0,1\n0,2\n", ":3: time 0 does not increase"),
    ("time,rate\n0,1\n5\n", ":3: expected 2 columns"),
    ("when,how\n0,1\n", ":1: expected a header with columns 'time,rate'"),
    ("time,rate\n0,1\n", "at least two rows"),
    ("time,rate\n0,1\n5,nan\n", ":3: time and rate must be finite"),
    ("", "empty"),
    ("time,rate,rate\n0,1,2\n5,1,2\n", ":1: the header names column 'rate' twice"),
    ("time,rate\n2024-01-01T00:00:10Z,1\n2024-01-01T00:00:05Z,1\n",
     ":3: time 2024-01-01T00:00:05Z does not increase .previous row: 2024-01-01T00:00:10Z"),
])
def test_trace_reader_names_the_line_of_an_error(tmp_path, body, message):
    f = tmp_path / "bad.csv"
    f.write_text(body)
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        L.read_trace(f)


# --- the job model --------------------------------------------------------------------------------------
def _job(rate, p=2, pause=1.0, n=200):
    spec = JobSpec("j", [StageSpec("s", service_rate=100.0, key_groups=12, initial_parallelism=p)],
                   rescale_pause_s=pause, warmup_s=0, capacity_noise=0.0)
    return SimulatedJob(spec, np.full(n, float(rate)), metrics_window_s=30)


def test_job_queues_when_overloaded_and_reports_true_rate():
    job = _job(300, p=2)
    for _ in range(30):
        job.step()
    o = job.observe()
    s = o.stages[0]
    assert s.processing_rate == pytest.approx(200) and s.busy_fraction == pytest.approx(1.0)
    assert s.backlog == pytest.approx(30 * 100)
    assert s.true_processing_rate() == pytest.approx(200)
    assert o.latency_p99_s > 15  # 3000 queued / 200 per s


def test_job_key_group_skew_and_pause():
    assert effective_parallelism(5, 12) == 4.0 and effective_parallelism(6, 12) == 6.0
    job = _job(450, p=5)  # 5 instances over 12 key groups: capacity of 4
    for _ in range(10):
        job.step()
    assert job.tl.processed[9, 0] == pytest.approx(400)
    job.set_parallelism({"s": 6})
    job.step()
    assert job.tl.processed[10, 0] == 0  # paused
    job.step()
    assert job.tl.processed[11, 0] > 450


def _p99s(model: str, rates: list[float]) -> np.ndarray:
    spec = JobSpec("q", [StageSpec("a", service_rate=100.0, initial_parallelism=1)], capacity_noise=0.0,
                   latency_model=model)
    job = SimulatedJob(spec, np.array(rates))
    for _ in rates:
        job.step()
    return job.tl.latency_p99


def test_the_transient_latency_model_prices_a_short_overload_at_what_it_queues():
    # steady at 90 % of one 100-records/s instance, two seconds at 150 %, steady again
    rates = [90.0] * 100 + [150.0] * 2 + [90.0] * 300
    stationary, transient = _p99s("stationary", rates), _p99s("transient", rates)
    assert transient[50] == pytest.approx(stationary[50])  # a steady state is the M/M/1 one either way
    assert transient[-1] == pytest.approx(stationary[-1], rel=1e-3)  # and the queue relaxes back to it
    # the stationary model adds ρ 0.99's steady sojourn (ln 100 / (100 × 0.01) = 4.6 s) for the two seconds;
    # the transient one what two seconds at the capacity add to the queue
    assert stationary[100:102].min() > 5.0 and transient[100:102].max() < 2.5
    assert transient[100:102].max() > transient[50] + 0.5  # it does cost latency


def test_a_lasting_high_load_reaches_the_steady_sojourn_in_the_transient_model_too():
    rates = [50.0] * 20 + [97.0] * 3000
    stationary, transient = _p99s("stationary", rates), _p99s("transient", rates)
    assert transient[20] < 0.35 * stationary[20] and transient[25] < 0.7 * stationary[25]  # the queue builds up
    assert np.all(np.diff(transient[20:]) >= -1e-12)  # steadily
    assert transient[-1] == pytest.approx(stationary[-1], rel=0.02)


def test_an_unknown_latency_model_is_refused():
    with pytest.raises(ValueError, match="unknown latency model 'mm1'; valid: stationary, transient"):
        _p99s("mm1", [1.0, 1.0])


def test_oracle_meets_the_target_with_the_least_resources():
    sc = Scenario("t", "", 1200.0, L.step(1000, 2500, 600), noise_sd=0.05, seed=1)
    o = run(sc, "oracle").summary
    d = run(sc, "ds2").summary
    assert o["slo_violation_s"] == 0
    assert o["executor_seconds"] < d["executor_seconds"]


def test_right_sized_start_is_the_oracles_first_step_for_every_policy():
    from elasticity.simulation.oracle import Oracle

    sc = Scenario("t", "", 120.0, L.constant(2000), noise_sd=0.05, seed=3)
    spec = sc.job_spec()
    deployed = [s.initial_parallelism for s in spec.stages]
    cfg = PolicyConfig()
    probe = SimulatedJob(spec, sc.arrivals(), dt=sc.dt, seed=sc.seed)
    first = Oracle(probe, cfg.latency_target_s, cfg.max_parallelism).targets(0)
    assert list(first.values()) != deployed  # the two starts differ on this job
    for pol in ("static", "ds2", "elastream", "oracle"):
        r = run(sc, pol, start="right-sized")
        assert r.timeline.parallelism[0].tolist() == list(first.values()), pol
        if pol == "static":
            assert r.summary["rescales"] == 0  # sizing the start is not a rescale
        if pol != "oracle":  # the oracle resizes (for free) before its first step either way
            assert run(sc, pol).timeline.parallelism[0].tolist() == deployed, pol
    assert [s.initial_parallelism for s in spec.stages] == deployed  # the spec is left as it was
    with pytest.raises(InputError, match="valid: as-deployed, right-sized"):
        run(sc, "ds2", start="warm")
    job = SimulatedJob(spec, sc.arrivals(), dt=sc.dt, seed=sc.seed)
    job.step()
    with pytest.raises(RuntimeError):
        job.set_initial_parallelism(first)


# --- elastream planning pieces --------------------------------------------------------------------------
def test_least_parallelism_is_key_group_aware():
    assert least_parallelism(450, 100, 12, 1, 12) == 6  # 5 instances only carry 4 instances' worth
    assert least_parallelism(450, 100, None, 1, 12) == 5


def test_rate_forecast_trend_noise_and_step():
    t = np.arange(60) * 30.0
    rng = np.random.default_rng(0)
    ramp = 1000 + 0.5 * t + rng.normal(0, 20, 60)
    f = RateForecast().fit(t, ramp, now=t[-1])
    assert f.slope_ == pytest.approx(0.5, rel=0.1) and 10 < f.noise_ < 40
    assert f.peak(600, 0) == pytest.approx(max(f.recent_, f.last_) + f.slope_ * 600)
    flat = 1000 + rng.normal(0, 20, 60)
    assert RateForecast().fit(t, flat, now=t[-1]).slope_ == 0.0  # no trend beyond the noise
    step = np.where(t < t[-3], 1000.0, 2000.0)
    g = RateForecast().fit(t, step, now=t[-1])
    assert g.noise_ == 0.0 and g.recent_ == 2000.0  # a step is neither noise nor a trend


def test_a_job_start_is_not_noise():
    # the operator's first scrape of a new job reads 0, the next ones the load: two differences, one of them the
    # start, once passed for noise of half the load (a scale-out at a steady 400/s on the real-node cluster)
    start = RateForecast().fit([0.0, 10.0, 20.0], [0.0, 400.0, 401.0], now=20.0)
    assert start.noise_ == 0.0 and start.peak(60, 2.5) == pytest.approx(401.0)
    later = RateForecast().fit([0.0, 10.0, 20.0, 30.0, 40.0], [0.0, 400.0, 380.0, 420.0, 390.0], now=40.0)
    assert later.noise_ > 10.0  # with three differences or more the start is one outlier among them


def test_a_trend_is_extrapolated_no_further_than_the_span_it_was_seen_over():
    t = np.arange(6) * 30.0  # 150 s of evidence
    f = RateForecast().fit(t, 2000 + 2.0 * t, now=t[-1])
    assert f.slope_ == pytest.approx(2.0) and f.span_ == 150.0
    level = max(f.recent_, f.last_)
    assert f.peak(1200, 0) == pytest.approx(level + 2.0 * 150)  # not + 2.0 × 1200
    assert f.peak(100, 0) == pytest.approx(level + 2.0 * 100)


def test_elastream_scales_out_the_whole_graph_in_one_step():
    src = stage("src", p=4, rate=2000, proc=1600, busy=1.0, backlog=5000, maxp=360)
    mid = stage("map", p=4, rate=1600, proc=1600, busy=0.7, upstream=["src"], maxp=360)
    o = obs(src, mid, t=0.0)
    p = ElastreamPolicy().propose(PolicyContext(o, [o], PolicyConfig(), now=0.0))
    assert p.targets["src"] > 4 and p.targets["map"] > 4  # map is not hot yet, but will be at 2k/s
    assert "scale out src 4→" in p.reason and "(with the others)" in p.reason


def test_elastream_holds_a_steady_load():
    s = stage("src", p=10, rate=800, proc=800, busy=0.8, maxp=360)
    hist = [obs(s, t=i * 30.0) for i in range(10)]
    p = ElastreamPolicy().propose(PolicyContext(hist[-1], hist, PolicyConfig(), now=hist[-1].timestamp))
    assert p.targets == {"src": 10} and p.reason.startswith("steady")


# --- end to end -----------------------------------------------------------------------------------------
def test_noisy_stationary_load_for_30_minutes_causes_at_most_one_rescale():
    r = run(builtin()["stationary"], "elastream")
    assert r.summary["rescales"] <= 1
    assert r.summary["slo_violation_s"] <= 5


def test_every_policy_runs_on_a_short_scenario_through_the_same_ports():
    sc = Scenario("short", "", 900.0, L.step(1500, 2500, 300), seed=3, job=default_job(1500))
    res = {p: run(sc, p, keep_decisions=True) for p in ("static", "hpa", "ds2", "mestream", "elastream")}
    assert res["static"].summary["rescales"] == 0
    for name in ("ds2", "elastream"):
        assert res[name].summary["rescales"] >= 1
        assert res[name].summary["slo_violation_s"] < res["static"].summary["slo_violation_s"]
        assert any(d.action == "scale" for d in res[name].decisions)
    assert all(d.reason for r in res.values() for d in r.decisions)


def test_simulate_cli_with_trace_json_and_plot(tmp_path, capsys):
    trace = tmp_path / "load.csv"
    trace.write_text("time,rate\n" + "\n".join(f"{t},{1500 + (1000 if 300 <= t < 700 else 0)}" for t in range(0, 1000, 50)))
    out_json, out_png = tmp_path / "s.json", tmp_path / "s.png"
    args = argparse.Namespace(scenario=None, trace=str(trace), policy="ds2", seed=0, json=str(out_json),
                              plot=str(out_png))
    assert simulate_main(args) == 0
    data = json.loads(out_json.read_text())
    assert set(data) == {"slo_violation_s", "p99_latency_s", "executor_seconds", "rescales", "rescales_undone",
                         "max_backlog"}
    assert data["rescales"] >= 1
    assert out_png.stat().st_size > 10_000
    out = capsys.readouterr().out
    assert "executor-seconds" in out
    ratio = float(out.split("vs oracle")[1].split("×")[0])
    assert ratio > 1.0  # the oracle rescales for free: a causal policy spends more
    assert f"could spend" in out and f"with {data['rescales']} rescale" in out


def test_simulate_cli_lists_each_rescale_with_its_reason(tmp_path, capsys):
    # a step up and back down: ds2 scales out at the step and in after it, the scale-in reversing the scale-out
    trace = tmp_path / "load.csv"
    trace.write_text("time,rate\n" + "\n".join(f"{t},{1500 + (1500 if 300 <= t < 900 else 0)}"
                                               for t in range(0, 2400, 30)))
    args = argparse.Namespace(scenario=None, trace=str(trace), policy="ds2", seed=0, json=None, plot=None,
                              decisions=True)
    assert simulate_main(args) == 0
    out = capsys.readouterr().out
    rescales = int(out.split("rescales")[1].split()[0])
    listed = out.split("rescales (3 stages: source, enrich, aggregate):")[1].strip().splitlines()
    times = [line.split()[0] for line in listed if not line.startswith(" " * 12)]
    assert rescales >= 2 and len(times) == rescales
    assert times == sorted(times) and all(len(t) == 8 and t.count(":") == 2 for t in times)
    assert all("scale" in line for line in listed if line.startswith(" " * 12))  # the policy's reason
    undone = int(out.split("rescales")[1].split("(")[1].split()[0])
    assert out.count("· undoes the one") == undone


def test_simulate_runs_a_broad_family_by_name():
    from elasticity.simulation.families import FAMILIES

    sc = get_scenario("web-day-3")
    assert sc.name == "web-day-3" and sc.duration_s == 12 * 3600
    assert sc.arrivals(None)[:500].tolist() == FAMILIES["web-day"](3).arrivals(None)[:500].tolist()
    assert sc.arrivals(None)[:500].tolist() != get_scenario("web-day-4").arrivals(None)[:500].tolist()
    with pytest.raises(InputError, match="FAMILY-SEED .* web-day"):
        get_scenario("web-night-3")


def test_simulate_cli_errors():
    with pytest.raises(InputError, match="valid: static, hpa, ds2, mestream, elastream, rl, oracle"):
        simulate_main(argparse.Namespace(scenario="step", trace=None, policy="magic", seed=0, json=None, plot=None))
    with pytest.raises(InputError, match="valid: stationary, step"):
        get_scenario("nope")


def test_benchmark_criteria_and_markdown_on_a_tiny_run():
    from elasticity.benchmark import criteria, markdown, run_all

    sc = {"short": Scenario("short", "a short step", 600.0, L.step(1500, 2200, 200), seed=4, job=default_job(1500))}
    res = run_all(sc, policies=("ds2", "elastream", "oracle"))
    crit = criteria(res)
    assert set(crit["short"]) == {"slo_le_ds2", "executor_seconds_vs_oracle", "executor_seconds_le_1_15_oracle",
                                  "rescales_le_ds2"}
    ratio = res["short"]["elastream"]["executor_seconds"] / res["short"]["oracle"]["executor_seconds"]
    assert crit["short"]["executor_seconds_vs_oracle"] == pytest.approx(ratio, abs=1e-3)
    md = markdown(res, {}, crit, sc, 1.0)
    assert "elastream bench elasticity" in md and "| elastream |" in md and "× oracle" in md
    assert "as deployed" in md and "Sensitivity" not in md
    sens = run_all(sc, policies=("ds2", "elastream", "oracle"), start="right-sized")
    md = markdown(res, {}, crit, sc, 1.0, sens, criteria(sens))
    head, tail = md.split("### Sensitivity: the same scenarios started right-sized (not part of the criteria)")
    assert "### The issue's criteria" in head and "### right-sized: short" in tail


def test_benchmark_reports_rescale_budget_floors():
    from elasticity.benchmark import criteria, markdown, run_all

    sc = {"short": Scenario("short", "a short step", 600.0, L.step(1500, 2200, 200), seed=4, job=default_job(1500))}
    floors: dict = {}
    res = run_all(sc, policies=("static", "ds2", "elastream", "oracle"), floors=floors)
    std, full = floors["short"]["oracle_standard"], floors["short"]["full_utilization"]
    assert set(std) == {"static", "ds2", "elastream"}
    for pol, s in res["short"].items():
        if pol == "oracle":
            continue
        # the floor is at most what the policy spent only if the policy served as well as the oracle; it is
        # always at least the oracle's (free rescales at every step) and the 100 % floor is below it
        assert std[pol] >= 0.999 and full[pol] <= std[pol]
    assert std["static"] == float("inf")  # the as-deployed start cannot carry 2,200/s at the oracle's standard
    crit = criteria(res, floors=floors)["short"]
    assert crit["floor_at_ds2_rescales_vs_oracle"] == std["ds2"]
    assert crit["reachable"] == (std["ds2"] <= 1.15)
    md = markdown(res, {}, criteria(res, floors=floors), sc, 1.0, floors={"main": floors})
    assert "× floor" in md and "Reachable at all" in md


@pytest.mark.parametrize("rows, words", [
    (["0,10", "1000000000,20"], "spans more than 7 days"),
    (["0,10", "1,1e12"], "above"),
])
def test_a_trace_that_would_hurt_is_refused_naming_the_line(tmp_path, rows, words):
    path = tmp_path / "t.csv"
    path.write_text("time,rate\n" + "\n".join(rows) + "\n")
    with pytest.raises(InputError, match=words):
        L.read_trace(path)


def test_a_trace_with_too_many_rows_is_refused_before_parsing(tmp_path):
    path = tmp_path / "big.csv"
    path.write_text("time,rate\n" + "".join(f"{i},1\n" for i in range(L.MAX_TRACE_ROWS + 1)))
    with pytest.raises(InputError, match="rows; at most"):
        L.read_trace(path)


def test_undone_rescales_count_reversals_within_15_minutes():
    from elasticity.simulation.job import Timeline
    from elasticity.simulation.runner import undone_rescales

    t = np.arange(0.0, 4000.0, 10.0)
    total = np.full(len(t), 4)
    total[(t >= 100) & (t < 500)] = 8  # out at 100 s, back in at 500 s: the scale-in reverses it within 15 min
    total[t >= 2000] = 6  # out at 2000 s, 1500 s after the last change: not a reversal
    total[t >= 2100] = 10  # a second scale-out on top: no reversal either
    p = np.stack([total - 1, np.ones(len(t), dtype=int)], axis=1)  # two stages; the total is what counts
    z = np.zeros((len(t), 2))
    tl = Timeline(t, np.zeros(len(t)), p, z, z, np.zeros(len(t)), np.zeros(len(t)), np.zeros(len(t)))
    assert undone_rescales(tl) == 1
    assert undone_rescales(tl, within_s=300.0) == 0  # 400 s apart
