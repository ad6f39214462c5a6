"""The StreamApp status an evaluation writes: conditions say why, numbers come from the decision."""
from controllers.conditions import get_condition
from controllers.status import decision_record, evaluated_status, invalid_status
from elasticity.model import Decision, JobObservation, StageMetrics


def _obs(p=2, p99=3.5):
    s = StageMetrics(name="executors", parallelism=p, input_rate=900.0, processing_rate=800.0, busy_fraction=0.95,
                     latency_p99_s=p99)
    return JobObservation(job="wc", timestamp=100.0, stages=[s], latency_p99_s=p99)


def _decision(action="scale", cur=2, to=4, guard=None, reason="scale out 2→4: busy 95%"):
    return Decision(job="wc", timestamp=100.0, policy="elastream", action=action, current={"executors": cur},
                    targets={"executors": to}, reason=reason, inputs={"input_rate": 900.0, "busy": 0.95}, guard=guard)


def test_scale_up_is_reported_with_reason_and_inputs():
    status = evaluated_status({}, _decision(), _obs(), realized=True, metrics_message=None, generation=3)
    d = status["lastDecision"]
    assert (d["action"], d["from"], d["to"], d["realized"], d["inputs"]["input_rate"]) == ("scaleUp", 2, 4, True, 900.0)
    assert (status["currentExecutors"], status["desiredExecutors"], status["latencyP99Seconds"]) == (2, 4, 3.5)
    assert get_condition(status["conditions"], "Scaling")["status"] == "True"
    assert get_condition(status["conditions"], "BottleneckDetected")["message"] == "scale out 2→4: busy 95%"
    assert get_condition(status["conditions"], "Ready")["status"] == "True"
    assert status["phase"] == "Scaling" and status["observedGeneration"] == 3


def test_advisor_decision_is_not_realized():
    status = evaluated_status({}, _decision(), _obs(), realized=False, metrics_message=None, generation=1)
    assert status["lastDecision"]["realized"] is False
    scaling = get_condition(status["conditions"], "Scaling")
    assert (scaling["status"], scaling["reason"]) == ("False", "Advised")


def test_missing_metrics_hold_says_why():
    d = _decision(action="hold", to=2, guard="metrics", reason="hold: no metrics")
    status = evaluated_status({}, d, None, realized=False,
                              metrics_message="Prometheus at http://p:9090 is unreachable: ConnectionError", generation=1)
    ma = get_condition(status["conditions"], "MetricsAvailable")
    assert (ma["status"], ma["reason"]) == ("False", "MetricsUnavailable") and "unreachable" in ma["message"]
    assert get_condition(status["conditions"], "Degraded")["status"] == "True"
    assert status["lastDecision"]["action"] == "hold" and status["phase"] == "Degraded"
    assert "currentExecutors" not in status


def test_metrics_awaited_after_a_rescale_are_no_fault():
    d = _decision(action="hold", to=2, guard="settling",
                  reason="hold: no metrics (no worker reports yet), 20 s after a rescale: the job restarts")
    status = evaluated_status({}, d, None, realized=False, metrics_message="no worker reports yet", generation=1)
    ma = get_condition(status["conditions"], "MetricsAvailable")
    assert (ma["status"], ma["reason"]) == ("False", "AwaitingMetrics")
    assert get_condition(status["conditions"], "Degraded")["status"] == "False"
    ready = get_condition(status["conditions"], "Ready")
    assert ready["status"] == "True" and ready["message"] == "the job restarts after a rescale"
    assert get_condition(status["conditions"], "Scaling")["reason"] == "AwaitingMetrics"
    bottleneck = get_condition(status["conditions"], "BottleneckDetected")  # not "capacity meets the load"
    assert (bottleneck["status"], bottleneck["reason"]) == ("Unknown", "AwaitingMetrics")
    assert status["phase"] == "Running"


def test_a_job_at_its_bounds_is_a_bottleneck_held_at_bounds():
    reason = "at the bounds: count at its max parallelism 2 cannot carry 495/s expected within 600s"
    status = evaluated_status({}, _decision("hold", 2, 2, guard="bounds", reason=reason), _obs(), realized=False,
                              metrics_message=None, generation=1)
    scaling = get_condition(status["conditions"], "Scaling")
    assert (scaling["status"], scaling["reason"], scaling["message"]) == ("False", "AtBounds", reason)
    bottleneck = get_condition(status["conditions"], "BottleneckDetected")
    assert (bottleneck["status"], bottleneck["message"]) == ("True", reason)
    assert get_condition(status["conditions"], "Ready")["status"] == "True"


def test_history_is_bounded():
    old = {"history": [decision_record(_decision(), True)] * 20}
    status = evaluated_status(old, _decision(action="none", to=2), _obs(), False, None, 1)
    assert len(status["history"]) == 20 and status["history"][-1]["action"] == "none"


def test_invalid_spec_status_names_the_problem():
    status = invalid_status({}, "spec.policyRef.name: ElasticityPolicy 'x' not found in ns", 2)
    ready = get_condition(status["conditions"], "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "InvalidSpec") and "spec.policyRef.name" in ready["message"]
    assert status["phase"] == "Failed"


def test_a_steady_verdict_while_an_executor_starts_keeps_the_desired_count():
    # 2 asked for, 1 registered so far: "none" at 1 must not read as a desired count of 1 (that would look like
    # someone else changed spec.replicas, a manual override, at the next evaluation)
    old = {"desiredExecutors": 2}
    status = {**old, **evaluated_status(old, _decision(action="none", cur=1, to=1, reason="steady"),
                                        _obs(p=1), realized=False, metrics_message=None, generation=1)}
    assert (status["desiredExecutors"], status["currentExecutors"]) == (2, 1)


def test_every_condition_the_writers_set_fits_the_status_schema():
    """Reconcile passes, evaluations and the schedule all write conditions into one list: together they must pass
    the CRD's schema (types and maxItems), or the API server refuses every status write with a 422."""
    from controllers.schedule import Lateness
    from controllers.status import progressing_status, schedule_status
    from elastream.api.status import CONDITION_TYPES, StreamAppStatus

    status = progressing_status({}, "Attached", "attached to the job", 1)
    status = {**status, **evaluated_status(status, _decision(), _obs(), True, None, 1)}
    status = schedule_status(status, Lateness(90.0, 30.0), 1)
    assert {c["type"] for c in status["conditions"]} == set(CONDITION_TYPES)
    StreamAppStatus.model_validate(status)


def test_an_evaluation_begun_before_a_suspend_leaves_the_suspended_status_alone():
    """A suspend while an evaluation runs: the reconcile wrote phase Suspended for generation 3; the evaluation,
    begun on generation 2, would write Running and take observedGeneration back."""
    from controllers.status import evaluation_write

    def running(st):
        return {**st, "phase": "Running", "observedGeneration": 2}

    suspended = {"phase": "Suspended", "observedGeneration": 3}
    assert evaluation_write(running, 2)(dict(suspended)) == suspended
    assert evaluation_write(running, 2)({"phase": "Pending", "observedGeneration": 2})["phase"] == "Running"
    assert evaluation_write(running, 2)({})["phase"] == "Running"  # a new app: nothing written yet


def test_an_evaluation_that_wrote_spec_replicas_still_reports_its_rescale():
    """The Spark engine writes spec.replicas before it rescales: the generation moves on during the evaluation and
    the reconcile of it writes observedGeneration 3 first. The rescale is still reported; the generation stays 3."""
    from controllers.status import evaluation_write

    def scaled(st):
        return {**st, "phase": "Scaling", "desiredExecutors": 3, "observedGeneration": 2}

    written = evaluation_write(scaled, 2)({"phase": "Running", "observedGeneration": 3})
    assert written["phase"] == "Scaling" and written["desiredExecutors"] == 3 and written["observedGeneration"] == 3


def test_a_reconcile_pass_over_an_older_snapshot_writes_nothing():
    from controllers.status import unless_stale

    def pending(st):
        return {**st, "phase": "Pending", "observedGeneration": 2}

    assert unless_stale(pending, 2)({"phase": "Suspended", "observedGeneration": 3})["phase"] == "Suspended"
    assert unless_stale(pending, 3)({"phase": "Suspended", "observedGeneration": 3})["phase"] == "Pending"
