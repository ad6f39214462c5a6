"""`elastream simulate --decisions` lists the notable holds after the rescales: runs of evaluations held at the bounds,
for the hour's rescale budget, for an ineffective scale-up or by the policy itself — not the guards' routine waits
(a scale-in's delay, the stabilization window, a backlog's catch-up)."""
import argparse

from elasticity.model import Decision
from elasticity.simulation import cli


def _d(t: float, action: str, guard: str | None = None, reason: str = "") -> Decision:
    return Decision(job="j", timestamp=t, policy="elastream", action=action, current={"a": 1}, targets={"a": 1},
                    reason=reason or f"{action} at {t:.0f}", guard=guard)


def test_consecutive_holds_of_one_guard_make_one_span_with_the_first_reason():
    ds = [_d(0, "none"), _d(30, "hold", "bounds", "at the bounds: first"), _d(60, "hold", "bounds", "second"),
          _d(90, "hold", "bounds"), _d(120, "none"), _d(150, "hold", "bounds", "again")]
    assert cli.hold_spans(ds) == [(30, 90, "bounds", 3, "at the bounds: first"), (150, 150, "bounds", 1, "again")]


def test_a_change_of_guard_ends_a_span_and_routine_holds_are_left_out():
    ds = [_d(0, "hold", "rate_limit", "budget"), _d(30, "hold", "bounds", "bounds"),
          _d(60, "hold", "scale_down_delay"), _d(90, "hold", "stabilization"), _d(120, "hold", "backlog"),
          _d(150, "hold", "bounds", "bounds again")]
    assert [(a, g, n) for a, _, g, n, _ in cli.hold_spans(ds)] == [(0, "rate_limit", 1), (30, "bounds", 1),
                                                                  (150, "bounds", 1)]
    lines = cli.format_holds(ds)
    assert lines[0].startswith("holds (rescale budget spent, at the bounds;")
    assert "00:00:30  at the bounds (AtBounds, 1 evaluation)\n            bounds" in lines[2]
    assert cli.format_holds([_d(0, "hold", "scale_down_delay"), _d(30, "none")]) == []


def test_a_trace_past_the_bounds_lists_its_hold_with_the_stage_that_bounds_it(tmp_path, capsys):
    trace = tmp_path / "crowd.csv"  # 2,000/s, then 30,000/s for 20 min: past what 64 instances of 'enrich' carry
    trace.write_text("time,rate\n0,2000\n600,2000\n601,30000\n1800,30000\n1801,2000\n2400,2000\n")
    args = argparse.Namespace(scenario=None, trace=str(trace), policy="elastream", seed=0, json=None, plot=None,
                              decisions=True)
    assert cli.simulate_main(args) == 0
    out = capsys.readouterr().out
    holds = out[out.index("\nholds ("):]
    assert "at the bounds (AtBounds, " in holds and "enrich at 60 instances" in holds
    first = holds.splitlines()[2].split()[0]  # the span's start, within the crowd
    h, m, s = (int(x) for x in first.split("–")[0].split(":"))
    assert 600 < 3600 * h + 60 * m + s < 1800
