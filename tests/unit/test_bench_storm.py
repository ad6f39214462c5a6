"""The storm-rebalance benchmark's measurement and table (the benchmark itself runs a real Storm cluster)."""
from elastream.bench_storm import MOVES, longest_gap, table


def test_longest_gap_counts_from_the_call_and_up_to_the_window_end():
    assert longest_gap(0.0, [0.5, 1.0, 13.0, 13.5], until=60.0) == 46.5  # nothing after 13.5 s
    assert longest_gap(0.0, [9.0, 9.1, 59.9], until=60.0) == 50.8
    assert longest_gap(0.0, [], until=60.0) == 60.0
    assert longest_gap(10.0, [5.0, 12.0, 20.0, 70.0], until=70.0) == 50.0  # growth before the call is ignored


def test_table_has_a_row_per_move_and_the_simulators_pause():
    runs = [{"move": label, "layout_s": 0.5, "gap_s": 10.0 + i, "replayed": 3} for i, (label, _, _) in enumerate(MOVES)]
    text = table({"runs": runs}, simulated_pause_s=10.0)
    assert all(f"| {label} | 1 |" in text for label, _, _ in MOVES)
    assert "| **all, measured** | 4 | – | 11.5 | 13.0 | – |" in text
    assert "simulator `storm-rebalance`" in text and "| 10.0 |" in text


def test_storm_exporter_refuses_a_bad_address_naming_the_option(capsys):
    import pytest

    from elastream.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["storm-exporter", "--nimbus", "nimbus", "--topology", "wc"])
    assert exit_.value.code == 2
    assert "--nimbus: 'nimbus' is not HOST:PORT" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["storm-exporter", "--nimbus", "n:6627", "--topology", "wc", "--listen", "0.0.0.0:99999"])
    assert "--listen: '0.0.0.0:99999' is not HOST:PORT" in capsys.readouterr().err


def test_bench_storm_rebalance_refuses_bad_options_before_starting_storm(capsys):
    from elastream.cli import main

    assert main(["bench", "storm-rebalance", "--repeats", "0"]) == 2
    assert "--repeats must be at least 1" in capsys.readouterr().err
    assert main(["bench", "storm-rebalance", "--rate", "-5"]) == 2
    assert "--rate must be above 0" in capsys.readouterr().err


def test_storm_placement_table_shows_both_schedulers_and_their_ratio():
    from elastream.bench_storm_placement import summarize
    from elastream.bench_storm_placement import table as placement_table

    def row(scheduler, between_workers, latency):
        return {"scheduler": scheduler, "round": 0, "tuples_per_s": 360.0, "inter_worker_per_s": between_workers,
                "inter_node_per_s": between_workers / 2, "nodes": 2, "complete_latency_ms": latency}

    runs = [row("default", 280.0, 56.0), row("elastream", 140.0, 42.0), row("default", 300.0, None)]
    summary = summarize(runs)
    assert summary["default"]["inter_worker_per_s"] == 290.0 and summary["default"]["complete_latency_ms"] == 56.0
    text = placement_table({"summary": summary})
    assert "| Storm default (even) | 360.0 | 290.0 | 145.0 | 2 | 56.0 |" in text
    assert "| **elastream / default** | 1.00 | 0.48 | 0.48 | – | 0.75 |" in text


def test_bench_storm_placement_refuses_bad_options_before_starting_storm(capsys):
    from elastream.cli import main

    assert main(["bench", "storm-placement", "--rounds", "0"]) == 2
    assert "--rounds must be at least 1" in capsys.readouterr().err
    assert main(["bench", "storm-placement", "--window", "5"]) == 2
    assert "--window must be at least 10 s" in capsys.readouterr().err
    assert main(["bench", "storm-placement", "--workers", "9"]) == 2
    assert "--workers must be from 2 to supervisors x slots (6)" in capsys.readouterr().err
