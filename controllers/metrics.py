"""The operator's own metrics (prometheus-client): decisions, evaluations and their schedule, realize latency,
errors, desired executors."""
from prometheus_client import Counter, Gauge, Histogram

DECISIONS = Counter("elastream_operator_decisions_total", "Policy evaluations by outcome", ["action", "guard"])
REALIZE_SECONDS = Histogram("elastream_operator_realize_seconds", "Time to apply a rescale (Spark: the control endpoint call; Storm: until Nimbus shows the rebalanced layout)",
                            buckets=(0.1, 0.5, 1, 2, 5, 10, 20, 40, 80))
ERRORS = Counter("elastream_operator_errors_total", "Errors by kind", ["kind"])
# What the operator decided at its last evaluation (status.desiredExecutors), per StreamApp; in advisor mode it is
# what it would have done. Set after each evaluation; the series is removed when the StreamApp's loop ends.
DESIRED_EXECUTORS = Gauge("elastream_desired_executors", "Executors the operator decided on (status.desiredExecutors)",
                          ["namespace", "streamapp"])

# The control loop itself: is every StreamApp evaluated every evaluationInterval?
EVALUATIONS = Counter("elastream_operator_evaluations_total", "StreamApp evaluations started (every outcome)")
EVALUATION_SECONDS = Histogram(
    "elastream_operator_evaluation_seconds", "Wall time of one evaluation, network waits included",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40))
DECISION_CPU_SECONDS = Histogram(
    "elastream_operator_decision_cpu_seconds",
    "CPU time of one evaluation in its worker thread (parsing, the decision, building requests and status): the "
    "decision latency without network waits",
    buckets=(0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008, 0.01, 0.0125, 0.015, 0.02, 0.03, 0.04, 0.05, 0.075,
             0.1, 0.25, 0.5, 1))
EVALUATION_LAG_SECONDS = Histogram(
    "elastream_operator_evaluation_lag_seconds", "How long after it was due an evaluation started",
    buckets=(0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300))
LATE_EVALUATIONS = Counter("elastream_operator_late_evaluations_total",
                           "Evaluations that started more than one evaluationInterval after they were due")
SLOW_LANE_APPS = Gauge("elastream_operator_slow_lane_apps",
                       "StreamApps whose last step was slow (their endpoints near their timeouts), served by the slow "
                       "lane's workers")
