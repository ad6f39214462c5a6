"""The calibration replay starts where the real run could first be read: its first commit. A job that is slow to
start (the JVMs) and short of CPU after it must not be replayed as a job running, and read, from the load's first
second — that replay scaled out half a minute before the real policy had a batch to go by."""
import json
from pathlib import Path

from elastream.local import manifest
from elastream.local.calibrate import compare

SHORT = Path(__file__).resolve().parents[1] / "local" / "short.yaml"
EPOCH = 1_800_000_000.0
TRIGGER, OVERHEAD, RATE = 3.0, 2.7, 3500.0  # a starved machine: 2.7 s of each 3-s batch is fixed cost
FIRST_START, FIRST_TOOK, SCALED_OUT, ARRIVED = 30.0, 22.0, 60.0, 66.0


def offered(t: float) -> float:  # short.yaml's generator: 300/s, 5000/s over [50, 100), 300/s
    return 5000.0 if 50 <= t < 100 else 300.0


def write_starved_run(report: Path) -> None:
    """A run of short.yaml as a busy machine makes it: the first batch starts at 30 s and takes 22 s; then each
    batch costs 2.7 s plus its rows; one scale-out at 60 s whose executor is there 6 s later."""
    batches, t, queued = [], FIRST_START, FIRST_START * 300.0
    while t < 150:
        executors = 2 if t >= ARRIVED else 1
        took = FIRST_TOOK if not batches else OVERHEAD + queued / RATE / executors
        rows, t_end = queued, t + took
        queued = sum(offered(s) for s in range(int(t), int(t_end) + 1))
        batches.append({"time": EPOCH + t_end, "rows": int(rows), "batch_duration": took, "executors": executors})
        t = t_end if took >= TRIGGER else t + TRIGGER
    samples = [{"t": s, "parallelism": {"executors": (2 if s >= ARRIVED else 1) if s >= 10 else 0},
                "latency_p99_s": None if s < FIRST_START + FIRST_TOOK else 8.0, "backlog": None,
                "processing_rate": None} for s in range(0, 151, 2)]
    (report / "job" / "checkpoint").mkdir(parents=True)
    (report / "report.json").write_text(json.dumps({"started_epoch_s": EPOCH, "rescales": [
        {"t": SCALED_OUT, "from": 1, "to": 2, "reason": "scale out"}]}))
    (report / "timeline.json").write_text(json.dumps(samples))
    (report / "job" / "progress.jsonl").write_text("".join(json.dumps(b) + "\n" for b in batches))
    (report / "job" / "checkpoint" / "elastream-run.json").write_text(json.dumps({
        "source": {"type": "generator", "generator": {"profile": "step", "rate": 300.0, "peak_rate": 5000.0,
                                                      "period": "50s", "duration": "150s"}},
        "start_us": int(EPOCH * 1e6)}))


def test_the_replay_starts_at_the_first_commit_and_compares_from_there(tmp_path):
    write_starved_run(tmp_path)
    comparison = compare(manifest.load(SHORT), tmp_path)
    assert comparison.start_s == FIRST_START + FIRST_TOOK
    assert comparison.calibration.batch_overhead_s_ > 2.0  # the fit reads the starved batches
    table = {name: (real, sim) for name, real, sim in comparison.table()}
    first_out = float(table["first scale-out at"][1].removesuffix(" s"))
    # on the load's clock, never before the real policy could read a batch (from the load's first second, the
    # replay scaled out at 5 s)
    assert first_out >= FIRST_START + FIRST_TOOK
    real, simulated = (float(v) for v in table["executor-seconds"])
    assert abs(simulated / real - 1) < 0.35, table  # the same span on both sides: 1 then 2 executors
