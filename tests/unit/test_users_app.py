"""The local mode's handling of a user's own application, without running it: where its main file is, what its
arguments become, what it refuses, and the lines its producer writes."""
from pathlib import Path

import numpy as np
import pytest

from elastream.api.manifests import ManifestError
from elastream.api.policy import ElasticityPolicySpec
from elastream.api.streamapp import StreamAppSpec
from elastream.engines.spark.users_app import LineProducer, check_runnable, expand, main_file
from elastream.local.manifest import LocalApp


def app(tmp_path: Path, main: str, source: str = "kafka") -> LocalApp:
    spec = StreamAppSpec.model_validate({"engine": "spark", "spark": {
        "application": {"type": "Python", "mainApplicationFile": main},
        "source": {"type": source, **({"kafka": {"bootstrapServers": "k:9092", "topic": "t"}}
                                      if source == "kafka" else {})}}})
    return LocalApp("yours", spec, ElasticityPolicySpec(), "default", directory=tmp_path)


def test_a_relative_main_file_is_found_beside_the_manifest_and_local_urls_are_paths(tmp_path):
    (tmp_path / "wc.py").write_text("print()")
    assert main_file(app(tmp_path, "wc.py")) == tmp_path / "wc.py"
    assert main_file(app(tmp_path, f"local://{tmp_path}/wc.py")) == tmp_path / "wc.py"
    check_runnable(app(tmp_path, "wc.py"))


def test_what_cannot_run_here_is_refused_naming_the_field(tmp_path):
    with pytest.raises(ManifestError, match="mainApplicationFile: no file"):
        check_runnable(app(tmp_path, "missing.py"))
    (tmp_path / "wc.py").write_text("print()")
    with pytest.raises(ManifestError, match="spec.spark.source.type"):
        check_runnable(app(tmp_path, "wc.py", source="generator"))
    with pytest.raises(ManifestError, match="mainApplicationFile: a URL is for a cluster"):
        check_runnable(app(tmp_path, "s3a://bucket/wc.py"))


def test_arguments_expand_as_kubernetes_expands_them():
    env = {"KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092"}
    assert expand("$(KAFKA_BOOTSTRAP_SERVERS)", env) == "127.0.0.1:9092"
    assert expand("--ck=$(ELASTREAM_WORKDIR)/ck", env) == "--ck=$(ELASTREAM_WORKDIR)/ck"  # unknown: left as it is
    assert expand("$KAFKA_BOOTSTRAP_SERVERS", env) == "$KAFKA_BOOTSTRAP_SERVERS"


def test_the_producer_writes_the_same_line_for_the_same_record():
    values = LineProducer.values(None, np.arange(5), np.zeros(5))
    assert values == LineProducer.values(None, np.arange(5), np.zeros(5))
    assert all(len(v.split()) == 4 for v in values) and len(set(values)) > 1
