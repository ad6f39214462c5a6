"""CSV traces at any scale: the reader streams (file or stdin) and stops at the first bound passed; long runs
report progress on stderr; a floor computed on blocks says so."""
import argparse
import io
import itertools
import sys
import tracemalloc

import numpy as np
import pytest

from elasticity.errors import InputError
from elasticity.simulation import cli
from elasticity.simulation import loads as L
from elasticity.simulation.bounds import RescaleBudgetBound
from elasticity.simulation.runner import PROGRESS_REPORTS, run
from elasticity.simulation.scenarios import Scenario, default_job


class EndlessPipe:
    """A binary stdin that never ends: `head` once, then `row(i)` for i = 0, 1, ... (bytes)."""

    def __init__(self, head: bytes, row) -> None:
        self.pending = head
        self.rows = (row(i) for i in itertools.count())
        self.bytes_read = 0

    def read(self, n: int = -1) -> bytes:
        while len(self.pending) < n:
            self.pending += next(self.rows)
        out, self.pending = self.pending[:n], self.pending[n:]
        self.bytes_read += len(out)
        return out


def _stdin(monkeypatch, buffer) -> None:
    monkeypatch.setattr(sys, "stdin", argparse.Namespace(buffer=buffer))


# --- the reader -------------------------------------------------------------------------------------------
def test_stdin_is_read_with_a_byte_order_mark_and_crlf(monkeypatch):
    _stdin(monkeypatch, io.BytesIO("\ufeffTime,Rate\r\n# note\r\n100,10\r\n\r\n160,30.5\r\n".encode()))
    tr = L.read_trace("-")
    assert list(tr.times) == [0, 60] and list(tr.rates) == [10, 30.5] and tr.path == "<stdin>"


def test_errors_on_stdin_name_it_and_the_line(monkeypatch):
    _stdin(monkeypatch, io.BytesIO(b"time,rate\n0,1\n5,-2\n"))
    with pytest.raises(InputError, match=r"^<stdin>:3: rate -2 is negative"):
        L.read_trace("-")


@pytest.mark.parametrize("limit, row, words", [
    ("MAX_TRACE_ROWS", lambda i: f"{i},5\n".encode(), "has more than 1000 rows; at most 1000"),
    ("MAX_TRACE_SPAN_S", lambda i: f"{i * 6 * 3600},5\n".encode(), r":11: the trace spans more than 2 days"),
    ("MAX_TRACE_BYTES", lambda i: f"{i},5\n".encode(), f"more than {200_000 / 2**20:g} MiB; at most"),
    ("MAX_TRACE_BYTES", lambda i: b"7" * 1000, f"more than {200_000 / 2**20:g} MiB; at most"),  # one endless line
])
def test_an_endless_stdin_is_refused_at_the_bound_it_passes(monkeypatch, limit, row, words):
    monkeypatch.setattr(L, limit, {"MAX_TRACE_ROWS": 1000, "MAX_TRACE_SPAN_S": 2 * 86400.0,
                                   "MAX_TRACE_BYTES": 200_000}[limit])
    pipe = EndlessPipe(b"time,rate\n", row)
    _stdin(monkeypatch, pipe)
    with pytest.raises(InputError, match=words):
        L.read_trace("-")
    assert pipe.bytes_read <= 300_000  # it stopped reading at the bound (plus a read-ahead buffer)


def test_a_file_over_the_byte_bound_is_refused_naming_its_size(tmp_path, monkeypatch):
    monkeypatch.setattr(L, "MAX_TRACE_BYTES", 2**20)
    path = tmp_path / "big.csv"
    path.write_text("time,rate\n" + "".join(f"{i},1\n" for i in range(300_000)))
    size = f"{path.stat().st_size / 2**20:.0f}"
    with pytest.raises(InputError, match=rf"big.csv: the trace is {size} MiB; at most 1 MiB"):
        L.read_trace(path)


def test_quoted_cells_and_extra_columns_are_read(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('"rate","host","time"\n"1.5","a,b","0"\n2,c,60\n')
    tr = L.read_trace(path)
    assert list(tr.times) == [0, 60] and list(tr.rates) == [1.5, 2]


def test_text_that_is_not_utf8_is_refused(tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes(b"time,rate\n0,1\n60,2\n# caf\xe9\n")
    with pytest.raises(InputError, match="cannot read the trace"):
        L.read_trace(path)


def test_the_reader_holds_numbers_not_text(tmp_path):
    rows = 50_000
    path = tmp_path / "long.csv"
    path.write_text("time,rate\n" + "".join(f"{i}.000,{1000 + i % 7}.25\n" for i in range(rows)))
    tracemalloc.start()
    try:
        tr = L.read_trace(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(tr.times) == rows and tr.rates[-1] == 1000 + (rows - 1) % 7 + 0.25
    # the two float arrays take 16 bytes a row; the text (18 bytes a row) held as line strings takes ~70
    assert peak < 3 * 16 * rows


# --- progress ---------------------------------------------------------------------------------------------
def _short(seconds: float) -> Scenario:
    return Scenario("short", "a short step", seconds, L.step(1500, 2200, seconds / 3), seed=4,
                    job=default_job(1500))


@pytest.mark.parametrize("policy, seconds", [("ds2", 650.0), ("oracle", 300.0), ("ds2", 40.0)])
def test_a_run_reports_its_progress_evenly_up_to_a_hundred_times(policy, seconds):
    seen: list[float] = []
    run(_short(seconds), policy, progress=seen.append)
    assert 0 < len(seen) <= PROGRESS_REPORTS
    assert seen == sorted(set(seen)) and seen[-1] == 1.0
    assert max(np.diff([0.0, *seen])) <= 1 / PROGRESS_REPORTS + 1 / seconds  # steps of dt = 1 s


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _feed(progress, n: int) -> None:
    for k in range(n):
        progress((k + 1) / n)


def test_progress_in_a_log_is_a_line_per_tenth():
    log = io.StringIO()
    _feed(cli.StderrProgress("simulating trace:x.csv", log), 700)
    assert log.getvalue().splitlines() == [f"simulating trace:x.csv: {p} %" for p in range(10, 101, 10)]


def test_progress_on_a_terminal_rewrites_one_line():
    tty = Terminal()
    _feed(cli.StderrProgress("simulating trace:x.csv", tty), 700)
    text = tty.getvalue()
    assert text.count("\n") == 1 and text.endswith("\rsimulating trace:x.csv: 100 %\n")
    assert "\rsimulating trace:x.csv: 42 %\r" in text and text.count("\r") == 100


def _simulate(tmp_path, capsys):
    trace = tmp_path / "load.csv"
    trace.write_text("time,rate\n" + "".join(f"{t},{1500 + (1000 if 300 <= t < 700 else 0)}\n"
                                             for t in range(0, 1000, 50)))
    args = argparse.Namespace(scenario=None, trace=str(trace), policy="ds2", seed=0, json=None, plot=None)
    assert cli.simulate_main(args) == 0
    return capsys.readouterr()


def test_a_long_run_reports_on_stderr_and_a_short_one_does_not(tmp_path, capsys, monkeypatch):
    short = _simulate(tmp_path, capsys)
    assert short.err == ""
    monkeypatch.setattr(cli, "LONG_RUN_STEPS", 500)
    long = _simulate(tmp_path, capsys)
    assert long.out == short.out  # stdout is the summary alone either way
    lines = long.err.splitlines()
    rescales = int(long.out.split("rescales")[1].split()[0])
    assert lines[9] == f"simulating trace:{tmp_path / 'load.csv'}: 100 %"
    assert all(line.startswith("the oracle on trace:") for line in lines[10:20])
    assert lines[20:] == [f"computing the rescale-budget floor for {rescales} rescales …"]


def test_a_floor_on_blocks_says_so_and_is_no_higher(tmp_path, capsys, monkeypatch):
    def vs_floor(out: str) -> str:
        return out.split("vs floor")[1].splitlines()[0]

    exact = vs_floor(_simulate(tmp_path, capsys).out)
    monkeypatch.setattr(RescaleBudgetBound, "MAX_INTERVALS", 10)
    coarse = vs_floor(_simulate(tmp_path, capsys).out)
    intervals = -(-951 // 30)  # the trace spans 950 s: 951 steps of 1 s, evaluated every 30 s
    assert exact.endswith("could spend")
    assert coarse.endswith(f"could spend (a floor on {-(-intervals // 10)}-interval blocks)")
    # a coarser floor is lower: the run is then a larger multiple of it
    assert float(coarse.split("×")[0]) >= float(exact.split("×")[0])


# --- a load past what the bounds carry ----------------------------------------------------------------------
def test_a_first_rate_past_the_bounds_starts_the_job_at_them_and_says_no_policy_keeps_up(tmp_path, capsys):
    trace = tmp_path / "huge.csv"
    trace.write_text("time,rate\n0,1e9\n120,1e9\n")
    args = argparse.Namespace(scenario=None, trace=str(trace), policy="elastream", seed=0, json=None, plot=None)
    assert cli.simulate_main(args) == 0
    out = capsys.readouterr().out
    # the 'enrich' stage: 150 records/s an instance, 64 instances over 360 key groups carry as 60 do
    assert "over capacity   the load peaks at 1000000000 records/s; at max parallelism 64" in out
    assert "carries at most 9000" in out
    scenario = cli.from_trace(str(trace))
    result = run(scenario, "static", seed=0)
    assert result.initial_parallelism == [64, 64, 64]  # 70 % of 1e9 would be millions of instances


def test_a_load_within_the_bounds_gets_no_capacity_line(tmp_path, capsys):
    trace = tmp_path / "small.csv"
    trace.write_text("time,rate\n0,100\n120,300\n")
    args = argparse.Namespace(scenario=None, trace=str(trace), policy="ds2", seed=0, json=None, plot=None)
    assert cli.simulate_main(args) == 0
    assert "over capacity" not in capsys.readouterr().out
