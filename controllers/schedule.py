"""When a StreamApp is evaluated next, and whether an evaluation started late: pure, so it is unit-tested alone.

An evaluation is due `interval` seconds after the previous one ended (evaluations of one app never overlap). One
that starts more than one interval after it was due is late: the operator is not keeping up (too many StreamApps
for its workers, or the API server is slow), and it says so in a metric, an event and the app's OnSchedule
condition.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Lateness:
    late_by_s: float    # how long after it was due the evaluation started
    interval_s: float   # the interval it was due after

    @property
    def late(self) -> bool:
        return self.late_by_s > self.interval_s


@dataclass
class Schedule:
    due: float | None = None        # monotonic time of the next evaluation; None: as soon as possible
    interval_s: float | None = None

    def is_due(self, now: float) -> bool:
        return self.due is None or now >= self.due

    def start(self, now: float) -> Lateness | None:
        """An evaluation starts now: how late it is (None for the first one, which has no due time)."""
        if self.due is None or self.interval_s is None:
            return None
        return Lateness(max(0.0, now - self.due), self.interval_s)

    def done(self, now: float, interval_s: float) -> None:
        """An evaluation ended now; the next is due after interval_s."""
        self.interval_s = interval_s
        self.due = now + interval_s

    def wait_s(self, now: float, resync_s: float) -> float:
        """How long to sleep before the loop's next step: until the next check or evaluation, at least 0.5 s."""
        until_due = 0.0 if self.due is None else self.due - now
        return max(0.5, min(resync_s, until_due))
