"""The Spark engine: a PySpark Structured Streaming job with one parallelism knob, its executors (one stage named
"executors" for the core), rescaled in place through the spark_apps runner's control endpoint."""
from __future__ import annotations

from pathlib import Path


class SparkEngine:
    name = "spark"
    unit = "executors"

    def parallelism_range(self, spec) -> tuple[int, int]:
        return spec.spark.executors.min, spec.spark.executors.max

    def reconcile(self, body, spec, *, all_objects: bool):
        from elastream.engines.spark.kubernetes import reconcile

        return reconcile(body, spec, all_objects=all_objects)

    def operator_job(self, namespace: str, name: str, spec, policy):
        from elastream.engines.spark.operator import SparkOperatorJob

        return SparkOperatorJob(namespace, name, spec, policy)

    def placement(self):
        from elastream.engines.spark.placement import SparkPlacement

        return SparkPlacement()

    def local_job(self, app, workdir: Path, duration_s: float):
        if app.spec.spark.application.is_users:
            from elastream.engines.spark import users_app

            users_app.check_runnable(app)
            return users_app.UsersAppLocalJob(app, workdir, duration_s)
        from elastream.engines.spark.local import SparkLocalJob, check_runnable

        check_runnable(app)
        return SparkLocalJob(app, workdir, duration_s)

    def describe(self, spec) -> str:
        application = spec.spark.application
        return application.builtin or application.file or f"{application.type} {application.main_application_file}"
