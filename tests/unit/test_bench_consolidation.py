"""The consolidation benchmark's measurement (the benchmark itself needs a cluster with real nodes)."""
import numpy as np

from elastream.bench_consolidation.measure import layout


def test_nodes_used_and_the_share_of_node_time_over_capacity():
    loads = {"a/1": np.array([0.2, 1.2, 0.2, 0.2]), "b/1": np.array([0.2, 0.2, 1.2, 0.2]),
             "c/1": np.array([0.5, 0.5, 0.5, 0.5])}
    packed = layout({"a/1": "n1", "b/1": "n1", "c/1": "n2"}, loads, {"n1": 1.5, "n2": 1.5})
    assert packed.nodes_used == 2 and packed.overload_pct == 0.0
    assert packed.peak_cores == {"n1": 1.4, "n2": 0.5}
    crowded = layout({"a/1": "n1", "b/1": "n1", "c/1": "n1"}, loads, {"n1": 1.5, "n2": 1.5})
    assert crowded.nodes_used == 1 and crowded.overload_pct == 50.0  # steps 1 and 2: 1.9 cores on 1.5
    within_tolerance = layout({"a/1": "n1"}, {"a/1": np.array([1.52])}, {"n1": 1.5})
    assert within_tolerance.overload_pct == 0.0


def test_bench_consolidation_refuses_bad_options_before_touching_a_cluster(capsys):
    from elastream.cli import main

    assert main(["bench", "consolidation", "--apps", "2"]) == 2
    assert "--apps must be at least 3" in capsys.readouterr().err
    assert main(["bench", "consolidation", "--rate", "2000", "--peak-rate", "100"]) == 2
    assert "--rate must be above 0 and at most --peak-rate" in capsys.readouterr().err
