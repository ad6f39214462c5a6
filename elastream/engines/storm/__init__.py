"""The Storm engine (being built): a topology whose components each have their own parallelism (executors),
rescaled by Nimbus rebalance."""
from __future__ import annotations


class StormEngine:
    name = "storm"
    unit = "executors per component"
