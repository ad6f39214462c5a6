"""A Nexmark source in the API, the runner's arguments for it, and where it may run (local mode only)."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from elastream.api.manifests import ManifestError
from elastream.api.streamapp import StreamAppSpec
from elastream.engines.spark.kubernetes import reconcile
from elastream.engines.spark.local import check_runnable
from elastream.engines.spark.runner_args import runner_args
from elastream.local.manifest import LocalApp

NEXMARK = {"type": "nexmark", "nexmark": {"profile": "step", "rate": 300, "peakRate": 3000, "period": "60s",
                                          "seed": 7, "partitions": 6}, "maxRecordsPerTrigger": 5000}


def spec(app: str = "nexmark-q5", source: dict | None = None) -> StreamAppSpec:
    return StreamAppSpec.model_validate({"engine": "spark", "policyRef": {"name": "p"}, "spark": {
        "application": {"builtin": app}, "source": source if source is not None else NEXMARK}})


def test_a_nexmark_query_needs_a_source_of_nexmark_events():
    with pytest.raises(ValidationError, match="nexmark-\\* application reads Nexmark events"):
        spec(source={"type": "generator"})
    with pytest.raises(ValidationError, match="nexmark is required when type is nexmark"):
        spec(source={"type": "nexmark"})
    assert spec().spark.source.nexmark.partitions == 6


def test_the_runner_reads_the_local_brokers_topic_from_the_start_and_stops_when_told():
    args = runner_args("q5", spec(), master="local[2]", checkpoint="/c", sink="/s", metrics_port=1, control_port=2,
                       token_file="/t", duration_s=60.0, nexmark_broker="127.0.0.1:9092")
    joined = " ".join(args)
    assert "--source kafka --kafka-bootstrap-servers 127.0.0.1:9092 --kafka-topic nexmark" in joined
    assert "--kafka-starting-offsets earliest" in joined and "--max-records-per-batch 5000" in joined
    assert "--stop-when-done" not in args  # the runner cannot see the end of a topic: the local job stops it
    with pytest.raises(ValueError, match="spec.spark.source.type: nexmark needs the local mode's broker"):
        runner_args("q5", spec(), master="m", checkpoint="/c", sink="/s", metrics_port=1, control_port=2,
                    token_file="/t")


def test_the_local_mode_runs_nexmark_but_not_an_outside_topic():
    check_runnable(LocalApp("q5", spec(), None, "p"))
    with pytest.raises(ManifestError, match="spec.spark.source.type"):
        check_runnable(LocalApp("w", spec("wordcount", {"type": "kafka", "kafka": {
            "bootstrapServers": "k:9092", "topic": "t"}}), None, "p"))
    with pytest.raises(ManifestError, match="spec.spark.application.builtin"):
        check_runnable(LocalApp("w", spec("wordcount", NEXMARK), None, "p"))


def test_the_operator_says_a_nexmark_source_is_for_the_local_mode_and_creates_nothing():
    done = reconcile({"metadata": {"name": "q5", "namespace": "n", "generation": 3}}, spec(), all_objects=True)
    status = done.status({})
    progressing = next(c for c in status["conditions"] if c["type"] == "Progressing")
    assert progressing["status"] == "False" and "spec.spark.source.type: nexmark" in progressing["message"]
