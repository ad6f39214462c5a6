"""The simulator's micro-batch job and its calibration: the fit recovers the figures a run was made with, and the
simulated micro-batch stage behaves as the real one was seen to (batches grow under a backlog; a record waits for
its batch; added executors arrive late)."""
import numpy as np
import pytest

from elasticity.errors import InputError
from elasticity.simulation.calibration import Batch, MicroBatchCalibration, Rescale
from elasticity.simulation.job import JobSpec, SimulatedJob, StageSpec

TRUTH = dict(service_rate=3000.0, overhead=0.3, task=2.0, trigger=3.0)


def synthetic_run(seed: int = 0, warm_start: float = 0.4, warm_s: float = 20.0, arrive_s: float = 8.0):
    """Batches a job with TRUTH's figures would log: a step from 500 to 3000 records/s at 60 s with one executor,
    a scale-out to two at 70 s whose executor arrives arrive_s later and ramps from warm_start over warm_s."""
    rng = np.random.default_rng(seed)
    batches, t, queue = [], 0.0, 0.0
    ready = 70.0 + arrive_s
    while t < 300:
        rate = 3000.0 if 60 <= t < 200 else 500.0
        start = t
        queue += rate * TRUTH["trigger"]
        executors = 2 if start >= ready else 1
        share = 1.0 if executors == 1 else warm_start + (1 - warm_start) * min((start - ready) / warm_s, 1.0)
        used = 1 + share if executors == 2 else 1
        rows = queue
        duration = TRUTH["overhead"] + (TRUTH["task"] + rows / TRUTH["service_rate"]) / used
        duration *= 1 + 0.02 * rng.standard_normal()
        queue = rate * max(duration - TRUTH["trigger"], 0.0)  # what arrived while the batch ran past its trigger
        t = start + max(duration, TRUTH["trigger"])
        batches.append(Batch(start + duration, int(rows), duration, executors))
    return batches, [Rescale(70.0, 1, 2, arrive_s)]


def test_the_fit_recovers_capacity_fixed_costs_arrival_and_warm_up():
    batches, rescales = synthetic_run()
    cal = MicroBatchCalibration().fit(batches, rescales, trigger_s=TRUTH["trigger"])
    assert cal.service_rate_ == pytest.approx(TRUTH["service_rate"], rel=0.1)
    assert cal.batch_task_s_ == pytest.approx(TRUTH["task"], abs=0.4)
    assert cal.batch_overhead_s_ == pytest.approx(TRUTH["overhead"], abs=0.4)
    assert cal.provision_s_ == 8.0
    # the ramp rests on six batches: its start and length trade off, the share it gives midway is what holds
    midway = cal.warmup_capacity_ + (1 - cal.warmup_capacity_) * min(10 / cal.warmup_s_, 1)
    assert midway == pytest.approx(0.4 + 0.6 * 10 / 20, abs=0.2) and 10 <= cal.warmup_s_ <= 30
    assert cal.defaulted_ == [] and cal.rescale_pause_s_ >= 0
    spec = cal.job_spec("wc", key_groups=4)
    assert spec.provision_s == 8.0 and spec.stages[0].batch_task_s == cal.batch_task_s_


def test_a_run_that_cannot_tell_the_costs_apart_is_refused_with_the_reason():
    flat = [Batch(3.0 * i, 900, 1.5, 1) for i in range(1, 20)]
    with pytest.raises(InputError, match="same rows per executor"):
        MicroBatchCalibration().fit(flat, [], trigger_s=3.0)
    with pytest.raises(InputError, match="steady batches"):
        MicroBatchCalibration().fit(flat[:4], [], trigger_s=3.0)
    with pytest.raises(InputError, match="trigger"):
        MicroBatchCalibration().fit(flat, [], trigger_s=0)


def microbatch_job(rate: float, executors: int = 1, provision_s: float = 0.0) -> SimulatedJob:
    stage = StageSpec("spark", service_rate=3000.0, key_groups=4, initial_parallelism=executors,
                      trigger_interval_s=3.0, batch_overhead_s=0.3, batch_task_s=2.0, base_latency_s=0.0)
    spec = JobSpec("wc", [stage], rescale_pause_s=0.0, provision_s=provision_s, warmup_s=0.0, capacity_noise=0.0)
    return SimulatedJob(spec, np.full(600, rate))


def test_batches_grow_under_a_backlog_so_a_micro_batch_stage_carries_more_than_one_trigger_allows():
    # within a 3 s trigger one executor carries 3000 × (1 − 2.3/3) = 700/s; back-to-back batches carry more
    job = microbatch_job(1500.0)
    for _ in range(600):
        job.step()
    assert job.tl.backlog[-1, 0] < 20_000  # it keeps up at 1500/s (backlog bounded, not 600 × 800)
    assert job.tl.processed[-100:, 0].mean() == pytest.approx(1500.0, rel=0.05)


def test_a_record_waits_for_its_batch_to_start_and_commit():
    job = microbatch_job(300.0)
    for _ in range(60):
        job.step()
    # a batch: 0.3 + (2 + 900/3000) = 2.6 s; the wait for it up to one trigger (3 s): p99 ≈ 2.97 + 2.6
    assert job.tl.latency_p99[59] == pytest.approx(0.99 * 3.0 + 2.6, abs=0.05)
    assert job.tl.latency_p50[59] == pytest.approx(0.5 * 3.0 + 2.6, abs=0.05)


def test_added_executors_carry_nothing_until_they_arrive():
    job = microbatch_job(300.0, provision_s=8.0)
    job.step()
    job.set_parallelism({"spark": 2})
    for _ in range(12):
        job.step()
    assert job.tl.processed[1:8, 0].max() <= job.tl.processed[0, 0] + 1e-6  # only the first executor's share
    before = microbatch_job(300.0, provision_s=0.0)
    before.step()
    before.set_parallelism({"spark": 2})
    for _ in range(3):
        before.step()
    assert before.tl.latency_p99[3] < job.tl.latency_p99[3]  # without the delay the batch is shorter at once
