"""What every engine offers the controllers and the local mode, and the errors they share.

An engine (Spark, Storm) answers a few small questions: what to create for a managed app, how to read one
observation, how to realize a decision, how to run the app on this machine. The controllers and the local loop
call these and never name an engine (the anchors: KEDA's Scaler, the Flink autoscaler's ScalingRealizer).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from elasticity.model import Decision
from elasticity.ports import MetricsSource, Mover, Realizer
from elasticity.ports import MetricsUnavailable  # noqa: F401  the core's error; every engine's metrics raise it


class JobUnreachable(Exception):
    """The running job (its control endpoint, its Nimbus) cannot be reached or refused; the message says why."""


class EngineNotSupported(Exception):
    """This build cannot run the app's engine (a part it needs is missing); the message names what."""


class ReconcileFailed(Exception):
    """The API server refused an owned object; `status` says so in the StreamApp's status before the retry."""

    def __init__(self, message: str, status):
        super().__init__(message)
        self.status = status


@dataclass
class Reconciled:
    """One reconcile pass of a StreamApp's managed objects: what it did (words), the status it leads to, and the
    events (reason, message) to report."""

    said: list[str]
    status: Callable[[dict[str, Any]], dict[str, Any]]
    events: list[tuple[str, str]] = field(default_factory=list)


class OperatorJob(Protocol):
    """One StreamApp's job as the operator sees it for one evaluation."""

    metrics: MetricsSource  # raises MetricsUnavailable

    def realizer(self) -> Realizer:
        """Applies a decision (records the intent on the StreamApp first where the engine has one)."""

    def current(self) -> dict[str, int] | None:
        """Parallelism per stage as the job itself reports it now (fresher than the last scrape), or None."""

    def manual_override(self, spec_replicas: int | None, decided: int | None) -> tuple[dict[str, int], dict[str, int], str] | None:
        """(targets, current, reason) when someone else set spec.replicas (kubectl scale), else None."""


class LocalJob(Protocol):
    """The processes of one local run; stop() ends all of them, also after an error."""

    def start(self) -> "LocalJob": ...

    def stop(self) -> None: ...

    def finished(self) -> bool: ...

    def metrics(self) -> MetricsSource:
        """Observations straight from the job (no Prometheus); raises MetricsUnavailable."""

    def realizer(self) -> Realizer: ...

    def sample(self) -> dict[str, Any]:
        """One progress sample: input_rate, processing_rate, latency_p50_s/p99_s, backlog, busy, parallelism
        (stage -> n), target (stage -> n), each None when unknown."""

    def verify(self, stopped_at: float) -> dict[str, Any]:
        """records_produced, records_processed, missing, duplicates (the verifier's verdict)."""

    def describe(self) -> str:
        """Where the job runs, for the first lines of the run."""


class EnginePlacement(Protocol):
    """Placement across apps (scope "cluster", Spark): one plan packs every placed app's executor pods onto the
    Kubernetes nodes by their measured loads (controllers.placement). What it needs from the engine: the executor
    pods, their loads, a way to move one."""

    scope: str  # "cluster"
    load_label: str  # the label of the load series that holds the executor id

    def unsupported(self, spec) -> str | None:
        """Why this app's executors cannot be placed (a message naming the field), or None."""

    def node_selector(self, spec) -> dict[str, str]:
        """Labels a node must have to take this app's executors."""

    def executor_selector(self, app: str) -> str:
        """Label selector of the app's executor pods."""

    def load_query(self, app: str) -> str:
        """PromQL: cores each executor keeps busy, one series per executor."""

    def executor_id(self, pod: dict[str, Any]) -> str | None: ...

    def mover(self, namespace: str, name: str, spec) -> "Mover":
        """Moves executors (elasticity.ports.Mover); raises SecretProblem when the job cannot be reached yet."""


@dataclass
class AppLayout:
    """One evaluation of an app placed by its engine's own scheduler: its status.placement (without lastMove),
    the executors the plan moves ([] when nothing is worth moving), why, and the Mover that applies the plan."""

    status: dict[str, Any]
    moves: list[str] = field(default_factory=list)
    why: str = ""
    mover: Mover | None = None


class AppPlacement(Protocol):
    """Placement per app (scope "app", Storm): the engine's scheduler lays out the app's executors as a plan made
    from what the job measures; a plan is applied whole, in one reconfiguration."""

    scope: str  # "app"

    def layout(self, namespace: str, name: str, spec, policy) -> AppLayout:
        """This evaluation's plan; raises JobUnreachable when the job cannot be read."""

    def forget(self, namespace: str, name: str) -> None:
        """Drop what is kept between evaluations (the app no longer asks for placement, or is gone)."""


class Engine(Protocol):
    name: str
    unit: str  # what its parallelism counts, for messages: "executors", "executors per component"

    def parallelism_range(self, spec) -> tuple[int, int]:
        """The app's own bounds on a stage's parallelism (before the policy's bounds)."""

    def reconcile(self, body: dict[str, Any], spec, *, all_objects: bool) -> Reconciled: ...

    def operator_job(self, namespace: str, name: str, spec, policy) -> OperatorJob:
        """Raises SecretProblem or UserError (messages name the field) when the job cannot be reached yet."""

    def local_job(self, app, workdir: Path, duration_s: float) -> LocalJob:
        """Raises ManifestError naming the field when the app cannot run locally."""

    def placement(self) -> EnginePlacement | AppPlacement | None:
        """How the operator places this engine's executors (by its `scope`), or None when it does not."""


def decision_realized(d: Decision) -> bool:
    return d.changed and not d.advisory and d.guard != "realize_failed"
