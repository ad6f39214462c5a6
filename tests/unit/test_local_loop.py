"""The local run's loop ends with the state that ended it: a drained job's last sample is the drained one, and a
drain that times out says so."""
import io

from elastream.local import run as local_run
from elasticity.config import PolicyConfig


class DrainingJob:
    """A job whose backlog falls by 100 a sample and which reports finished once it reads 0 (as Spark's does, on
    its own read of the metrics, after the loop's last sample)."""

    def __init__(self, backlog: int, ever_drains: bool = True):
        self.backlog, self.ever_drains = backlog, ever_drains

    def finished(self) -> bool:
        if self.ever_drains:
            self.backlog = max(0, self.backlog - 100)
        return self.ever_drains and self.backlog == 0

    def sample(self):
        return {"input_rate": 0.0, "processing_rate": None, "latency_p99_s": None, "latency_p50_s": None,
                "backlog": self.backlog, "busy": None, "parallelism": {"executors": 1}, "target": None}

    def metrics(self):
        return None

    def realizer(self):
        return None


def run_loop(job, monkeypatch, drain_timeout_s=60.0):
    monkeypatch.setattr(local_run, "DRAIN_TIMEOUT_S", drain_timeout_s)
    timeline = local_run.Timeline()
    config = PolicyConfig(evaluation_interval_s=3600.0)  # no evaluation within the test
    drained = local_run._loop(job, "app", config, timeline, started=local_run.time.time(), duration_s=0.0,
                              sample_s=0.0, out=io.StringIO())
    return drained, [s["backlog"] for s in timeline.samples]


def test_a_drained_run_ends_on_the_sample_that_shows_it_drained(monkeypatch):
    drained, backlog = run_loop(DrainingJob(300), monkeypatch)
    assert drained and backlog == [200, 100, 0]


def test_a_drain_that_times_out_is_not_drained(monkeypatch):
    drained, backlog = run_loop(DrainingJob(300, ever_drains=False), monkeypatch, drain_timeout_s=0.0)
    assert not drained and backlog == [300]
