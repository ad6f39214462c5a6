"""The pure side of `elastream bench consolidation`: from executors' measured CPU (one series each) and where they
ran, the nodes used and the share of node-time over capacity."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Layout:
    nodes_used: int
    overload_pct: float  # node-steps over capacity / node-steps of the used nodes, x100
    peak_cores: dict[str, float]  # node -> the highest summed executor CPU
    capacity: dict[str, float]  # node -> cores the executors may use (allocatable less the other pods' requests)


def layout(node_of: dict[str, str], loads: dict[str, np.ndarray], capacity: dict[str, float],
           tolerance: float = 0.02) -> Layout:
    """node_of: executor -> node; loads: executor -> cores on a common grid; capacity: node -> cores. A node-step
    counts as overloaded when its executors' cores exceed the capacity by more than `tolerance` (relative)."""
    nodes = sorted(set(node_of.values()))
    steps = max((len(v) for v in loads.values()), default=0)
    total = {n: np.zeros(steps) for n in nodes}
    for executor, node in node_of.items():
        series = loads.get(executor)
        if series is not None and len(series):
            total[node][: len(series)] += series
    over = sum(int(np.sum(total[n] > capacity.get(n, 0.0) * (1 + tolerance))) for n in nodes)
    share = 100.0 * over / (len(nodes) * steps) if nodes and steps else 0.0
    return Layout(len(nodes), round(share, 2), {n: round(float(total[n].max(initial=0.0)), 3) for n in nodes},
                  {n: round(capacity.get(n, 0.0), 3) for n in nodes})
