"""spec.spark.application.recordCost: parsed, passed to the runner, and waited per record (a lower bound only: a
busy machine may wait longer, never shorter)."""
import time

import pytest

from elastream.api.manifests import ManifestError, parse_manifest
from elastream.engines.spark.runner_args import runner_args
from spark_apps.apps import _Hold
from spark_apps.profile import parse_duration
from tests.manifests import example


def _app(cost):
    doc = example("StreamApp")
    doc["spec"]["spark"]["application"]["recordCost"] = cost
    return doc


def test_record_cost_reaches_the_runner():
    _, name, spec = parse_manifest(_app("250us"))
    args = runner_args(name, spec, master="local[1]", checkpoint="/c", sink="/s", metrics_port=1, control_port=2,
                       token_file="/t")
    assert args[args.index("--record-cost") + 1] == "250us"
    assert parse_duration("250us") == pytest.approx(250e-6)


def test_no_record_cost_passes_nothing():
    doc = example("StreamApp")
    doc["spec"]["spark"]["application"].pop("recordCost", None)
    _, name, spec = parse_manifest(doc)
    args = runner_args(name, spec, master="local[1]", checkpoint="/c", sink="/s", metrics_port=1, control_port=2,
                       token_file="/t")
    assert "--record-cost" not in args


@pytest.mark.parametrize("bad", ["fast", "-1ms", "0s"])
def test_a_bad_record_cost_is_rejected_naming_the_field(bad):
    with pytest.raises(ManifestError) as err:
        parse_manifest(_app(bad))
    assert any(p.startswith("spec.spark.application.recordCost") for p in err.value.problems), err.value.problems


def test_hold_waits_at_least_what_the_records_cost():
    hold, records = _Hold(0.0005), 40
    started = time.monotonic()
    assert all(hold(i) for i in range(records))
    assert time.monotonic() - started >= records * 0.0005 - _Hold.SLICE_S
    assert hold.owed < _Hold.SLICE_S
