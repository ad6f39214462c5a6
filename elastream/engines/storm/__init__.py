"""The Storm engine: a topology whose components each have their own parallelism (executors), one stage per
component for the core, rescaled by Nimbus Thrift rebalance; workers follow the total executors."""
from __future__ import annotations

from pathlib import Path

DEFAULT_MAX_PARALLELISM = 64  # a component without maxParallelism: bounded by its task count, which Nimbus reports


class StormEngine:
    name = "storm"
    unit = "executors per component"

    def __init__(self):
        from elastream.engines.storm.placement import StormPlacement

        self._placement = StormPlacement()  # keeps each placed app's last reading between evaluations

    def parallelism_range(self, spec) -> tuple[int, int]:
        caps = spec.storm.max_parallelism.values()
        return 1, max(caps) if caps else DEFAULT_MAX_PARALLELISM

    def reconcile(self, body, spec, *, all_objects: bool):
        from elastream.engines.storm.kubernetes import reconcile

        return reconcile(body, spec, all_objects=all_objects)

    def operator_job(self, namespace: str, name: str, spec, policy):
        from elastream.engines.storm.operator import StormOperatorJob

        return StormOperatorJob(namespace, name, spec, policy)

    def placement(self):
        """Per app: ETW/WTN over the measured tuple rates, applied by Nimbus's PlanScheduler."""
        return self._placement

    def local_job(self, app, workdir: Path, duration_s: float):
        from elastream.engines.storm.local import StormLocalJob, check_runnable

        check_runnable(app)
        return StormLocalJob(app, workdir, duration_s)

    def describe(self, spec) -> str:
        return spec.storm.application.builtin
