"""The operator's own metrics (prometheus-client): decisions, realize latency, errors, desired executors."""
from prometheus_client import Counter, Gauge, Histogram

DECISIONS = Counter("elastream_operator_decisions_total", "Policy evaluations by outcome", ["action", "guard"])
REALIZE_SECONDS = Histogram("elastream_operator_realize_seconds", "Time to apply a rescale (Spark: the control endpoint call; Storm: until Nimbus shows the rebalanced layout)",
                            buckets=(0.1, 0.5, 1, 2, 5, 10, 20, 40, 80))
ERRORS = Counter("elastream_operator_errors_total", "Errors by kind", ["kind"])
# What the operator decided at its last evaluation (status.desiredExecutors), per StreamApp; in advisor mode it is
# what it would have done. Set after each evaluation; the series is removed when the StreamApp's loop ends.
DESIRED_EXECUTORS = Gauge("elastream_desired_executors", "Executors the operator decided on (status.desiredExecutors)",
                          ["namespace", "streamapp"])
