"""What placement needs from a managed Spark app: its executor pods, each executor's load, and a way to move one.

An executor's load is the rate of its task seconds (elastream_executor_task_seconds_total, exported by the runner
from Spark's status store): the cores it keeps busy. Spark labels each executor pod with its executor id
(spark-exec-id); moving an executor is decommissioning it with a replacement (the runner's POST
/executors/replace), whose new pod the operator's admission webhook sends to the planned node.
"""
from __future__ import annotations

from typing import Any

from elastream.engines.owners import LABEL_APP, LABEL_ROLE
from elastream.engines.spark.control import ControlEndpointClient

EXECUTOR_ID_LABEL = "spark-exec-id"
LOAD_QUERY = 'rate(elastream_executor_task_seconds_total{{app="{app}"}}[1m])'


class SparkPlacement:
    """The engine's answers for placement (elastream.engines.base.EnginePlacement)."""

    scope = "cluster"  # one plan packs the executor pods of every placed app onto the nodes
    load_label = "executor"  # the load series' label holding the executor id

    @staticmethod
    def unsupported(spec) -> str | None:
        if spec.spark.attach is not None:
            return "spec.spark.attach: the executors of an attached job are not the operator's to place"
        executor = spec.spark.executor
        if executor.affinity is not None or executor.tolerations:
            return ("spec.spark.executor.affinity and .tolerations: the placement plan knows only spec.spark."
                    "nodeSelector and untainted nodes, so it cannot place executors that set them")
        return None

    @staticmethod
    def node_selector(spec) -> dict[str, str]:
        """The nodes the app's executors may use (spec.spark.nodeSelector)."""
        return dict(spec.spark.node_selector or {})

    @staticmethod
    def executor_selector(app: str) -> str:
        return f"{LABEL_APP}={app},{LABEL_ROLE}=executor"

    @staticmethod
    def load_query(app: str) -> str:
        return LOAD_QUERY.format(app=app)

    @staticmethod
    def executor_id(pod: dict[str, Any]) -> str | None:
        return ((pod.get("metadata") or {}).get("labels") or {}).get(EXECUTOR_ID_LABEL)

    @staticmethod
    def mover(namespace: str, name: str, spec) -> "ControlEndpointMover":
        from elastream.engines.spark.operator import control_client

        return ControlEndpointMover(control_client(namespace, name, spec))


class ControlEndpointMover:
    """Mover port: decommission the executors with replacements (their new pods go where the plan says)."""

    def __init__(self, client: ControlEndpointClient):
        self.client = client

    def move(self, job: str, executors: list[str]) -> list[str]:
        return list(self.client.replace_executors(executors).get("replaced", []))
