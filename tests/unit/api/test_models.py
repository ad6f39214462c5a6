"""The API models accept the examples and reject malformed specs with messages naming the field."""
import pytest

from elastream.api.base import parse_duration
from elastream.api.manifests import ManifestError, parse_manifest
from elastream.api.policy import ElasticityPolicySpec
from elastream.api.streamapp import StreamAppSpec
from tests.manifests import MALFORMED, example, malformed


def test_examples_parse_with_defaults():
    kind, name, spec = parse_manifest(example("StreamApp"))
    assert (kind, name) == ("StreamApp", "wordcount")
    assert spec.spark.executors.max == 2 and spec.spark.source.generator.peak_rate == 5000 and spec.spark.application.record_cost == "250us"
    _, _, policy = parse_manifest(example("ElasticityPolicy"))
    assert policy.scale_down.delay == "20s" and policy.metrics.prometheus.queries.latency_p99.startswith("max(")


def test_defaults_fill_an_empty_policy():
    policy = ElasticityPolicySpec.model_validate({})
    assert (policy.mode, policy.algorithm, policy.target_utilization, policy.latency_target) == ("auto", "elastream", 0.7, "5s")


@pytest.mark.parametrize("text,seconds", [("30s", 30), ("5m", 300), ("1h30m", 5400), ("250ms", 0.25), ("1.5h", 5400)])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5", "5 seconds", "-1s", "1d"])
def test_parse_duration_rejects(text):
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


@pytest.mark.parametrize("case_id", [c[0] for c in MALFORMED])
def test_malformed_rejected_naming_the_field(case_id):
    doc, field, words = malformed(case_id)
    with pytest.raises(ManifestError) as err:
        parse_manifest(doc)
    lines = [p for p in err.value.problems if p.startswith(field + ":")]
    assert lines, f"no problem names {field}: {err.value.problems}"
    assert any(words.lower() in line.lower() for line in lines), lines


def test_rule_message_is_the_cel_message():
    doc, field, words = malformed("min-above-initial")
    with pytest.raises(ManifestError) as err:
        parse_manifest(doc)
    assert f"{field}: {words}" in err.value.problems


def test_unknown_field_is_named():
    doc = example("StreamApp")
    doc["spec"]["spark"]["executorz"] = 3
    with pytest.raises(ManifestError) as err:
        parse_manifest(doc)
    assert 'spec.spark: unknown field "executorz"' in err.value.problems


def test_wire_round_trip_uses_camel_case():
    spec = StreamAppSpec.model_validate(example("StreamApp")["spec"])
    wire = spec.to_wire()
    assert wire["policyRef"] == {"name": "latency-10s"} and "maxParallelism" in wire["spark"]
    assert StreamAppSpec.model_validate(wire) == spec

