"""ElasticityPolicy: how a streaming job is kept elastic (what to measure, what to aim for, how fast to move)."""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from elastream.api.base import ApiModel, Duration, Rule, parse_duration, rule_error

DEFAULT_PROMETHEUS_URL = "http://prometheus-operated.monitoring.svc:9090"

# PromQL over the metrics the spark_apps runner exports. {app} is replaced by the StreamApp's name.
DEFAULT_QUERIES = {
    "inputRate": 'sum(elastream_input_rate{app="{app}"})',
    "processingRate": 'sum(elastream_processing_rate{app="{app}"})',
    "busyFraction": 'max(elastream_batch_duration_seconds{app="{app}"} / elastream_trigger_interval_seconds{app="{app}"})',
    "latencyP50": 'max(elastream_latency_p50_seconds{app="{app}"})',
    "latencyP99": 'max(elastream_latency_p99_seconds{app="{app}"})',
    "backlog": 'sum(elastream_backlog_records{app="{app}"})',
    "executors": 'max(elastream_executors{app="{app}"})',
    "sampleTime": 'max(timestamp(elastream_executors{app="{app}"}))',
    "sourcePartitions": 'max(elastream_source_partitions{app="{app}"})',
}

URL_PATTERN = r"^https?://[^\s/$.?#][^\s]*$"
MAX_QUERY_LENGTH = 4096
BRACKETS = ("()", "[]", "{}")
UNBALANCED = "parentheses (), brackets [] and braces {} must balance"


def brackets_balance(promql: str) -> bool:
    """As many closing as opening brackets of each kind: what the CEL rule can check (no loops in CEL)."""
    return all(promql.count(o) == promql.count(c) for o, c in BRACKETS)


def _balanced(promql: str) -> str:
    if not brackets_balance(promql):
        raise rule_error(UNBALANCED)
    return promql


PromQL = Annotated[
    str,
    Field(min_length=1, max_length=MAX_QUERY_LENGTH, json_schema_extra={"x-kubernetes-validations": [{
        "rule": " && ".join(f"self.split('{o}').size() == self.split('{c}').size()" for o, c in BRACKETS),
        "message": UNBALANCED}]}),
    AfterValidator(_balanced),
]


class Queries(ApiModel):
    """PromQL per metric; `{app}` is replaced by the StreamApp's name."""

    input_rate: PromQL = Field(DEFAULT_QUERIES["inputRate"], description="records/s offered to the job")
    processing_rate: PromQL = Field(DEFAULT_QUERIES["processingRate"], description="records/s processed")
    busy_fraction: PromQL = Field(
        DEFAULT_QUERIES["busyFraction"], description="fraction of time busy (batch duration / trigger interval)"
    )
    latency_p50: PromQL = Field(DEFAULT_QUERIES["latencyP50"], description="end-to-end latency p50, seconds")
    latency_p99: PromQL = Field(DEFAULT_QUERIES["latencyP99"], description="end-to-end latency p99, seconds")
    backlog: PromQL = Field(DEFAULT_QUERIES["backlog"], description="records offered but not yet read")
    executors: PromQL = Field(DEFAULT_QUERIES["executors"], description="executors (or workers) running")
    sample_time: PromQL = Field(
        DEFAULT_QUERIES["sampleTime"], description="Unix time of the job's newest sample: metrics.staleAfter is "
        "measured from it (an instant query's own time is always now, even for a frozen exporter)")
    source_partitions: PromQL = Field(
        DEFAULT_QUERIES["sourcePartitions"], description="Kafka partitions the job reads: no more executors than "
        "they keep busy (partitions / executor cores, rounded up) are planned; no series: no bound")


class PrometheusSource(ApiModel):
    url: str = Field(DEFAULT_PROMETHEUS_URL, pattern=URL_PATTERN, max_length=2048, description="Prometheus base URL (http or https)")
    queries: Queries = Field(default_factory=Queries)


class MetricsSource(ApiModel):
    prometheus: PrometheusSource = Field(default_factory=PrometheusSource)
    stale_after: Duration = Field("2m", description="metrics whose newest sample is older than this are stale: "
                                  "scaling holds")
    scrape_interval: Duration = Field(
        "5s", description="how often Prometheus scrapes the job (the chart's monitors: metrics.interval); "
        "evaluationInterval and staleAfter must be at least this")


class StepLimit(ApiModel):
    max_step: int | None = Field(None, ge=1, le=1000, description="at most this many executors added (or removed) in one decision")


class ScaleDown(StepLimit):
    delay: Duration | None = Field(
        None, description="scale down only after it has been wanted this long (unset: 10m, or 2m when the "
        "elastream policy's forecast is confident the lower load will hold)")


class Bounds(ApiModel):
    rules = (Rule("self.min <= self.max", "min must be less than or equal to max", lambda b: b.min <= b.max, ".min"),)

    min: int = Field(..., ge=1, le=10000, description="fewest executors (or workers)")
    max: int = Field(..., ge=1, le=10000, description="most executors (or workers)")


class MeStream(ApiModel):
    phi: float = Field(1.0, gt=0, le=10, description="Me-Stream eq. 7 scale factor φ")
    bottleneck_interval: Duration = Field("1m", description="a bottleneck must recur within this interval (Algorithm 1)")


def _window_covers_interval(p: "ElasticityPolicySpec") -> bool:
    return parse_duration(p.metrics_window) >= parse_duration(p.evaluation_interval)


def _at_least_scrape(duration_of):
    """The check of a rule: duration_of(policy) is at least the policy's scrape interval."""
    return lambda p: parse_duration(duration_of(p)) >= parse_duration(p.metrics.scrape_interval)


class ElasticityPolicySpec(ApiModel):
    rules = (
        Rule(
            "duration(self.metricsWindow) >= duration(self.evaluationInterval)",
            "metricsWindow must be at least evaluationInterval",
            _window_covers_interval,
            ".metricsWindow",
        ),
        Rule(
            "duration(self.evaluationInterval) >= duration(self.metrics.scrapeInterval)",
            "evaluationInterval must be at least metrics.scrapeInterval (no new sample comes sooner)",
            _at_least_scrape(lambda p: p.evaluation_interval),
            ".evaluationInterval",
        ),
        Rule(
            "duration(self.metrics.staleAfter) >= duration(self.metrics.scrapeInterval)",
            "metrics.staleAfter must be at least metrics.scrapeInterval (else every sample is stale)",
            _at_least_scrape(lambda p: p.metrics.stale_after),
            ".metrics.staleAfter",
        ),
    )

    mode: Literal["auto", "advisor"] = Field("auto", description="auto rescales; advisor only reports what it would do")
    algorithm: Literal["elastream", "ds2", "mestream", "hpa", "rl", "static"] = Field(
        "elastream", description="the planner that picks the parallelism"
    )
    detector: Literal["regression", "rate"] | None = Field(
        None, description="bottleneck detector: regression (Me-Stream threshold function) or rate (busy fraction); "
        "unset: regression for algorithm mestream, rate for the others")
    metrics: MetricsSource = Field(default_factory=MetricsSource)
    latency_target: Duration = Field("5s", description="end-to-end p99 latency the job must stay under")
    target_utilization: float = Field(0.7, gt=0, le=1, description="busy fraction to plan for (0 < u <= 1)")
    evaluation_interval: Duration = Field("30s", description="how often the policy is evaluated")
    metrics_window: Duration = Field("5m", description="how much metric history each evaluation reads")
    stabilization_window: Duration = Field("5m", description="after a rescale, metrics are ignored this long")
    catch_up_duration: Duration = Field("5m", description="a backlog should be drained within this time")
    scale_up: StepLimit = Field(default_factory=StepLimit)
    scale_down: ScaleDown = Field(default_factory=ScaleDown)
    max_rescales_per_hour: int = Field(6, ge=1, le=3600, description="cap on rescales in any hour")
    placement: Literal["none", "elastream", "greedy", "ga"] = Field(
        "none", description="place executors from what they measure (docs/placement-operator.md). Spark: on the "
        "fewest nodes with no predicted overload, by their load profiles: elastream, ga (seed 001), greedy (seed "
        "002). Storm: on workers and supervisors by the tuple rates between them (seed 002's ETW/WTN; elastream "
        "refines it, greedy is as published). none leaves it to the scheduler")
    bounds: Bounds | None = Field(None, description="bounds on executors (or workers), intersected with the StreamApp's")
    mestream: MeStream = Field(default_factory=MeStream)
