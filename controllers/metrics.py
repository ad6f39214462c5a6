"""The operator's own metrics (prometheus-client): decisions, realize latency, errors."""
from prometheus_client import Counter, Histogram

DECISIONS = Counter("elastream_operator_decisions_total", "Policy evaluations by outcome", ["action", "guard"])
REALIZE_SECONDS = Histogram("elastream_operator_realize_seconds", "Time to apply a rescale through the control endpoint",
                            buckets=(0.1, 0.5, 1, 2, 5, 10, 20, 40, 80))
ERRORS = Counter("elastream_operator_errors_total", "Errors by kind", ["kind"])
