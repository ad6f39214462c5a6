"""`elastream validate` reports each problem with its field, and exits non-zero."""
import yaml

from elastream.cli import main
from tests.conftest import ROOT
from tests.manifests import malformed


def test_examples_are_valid(capsys):
    assert main(["validate", *map(str, sorted((ROOT / "examples").glob("*.yaml")))]) == 0
    assert "StreamApp/wordcount is valid" in capsys.readouterr().out


def test_kubernetes_examples_are_valid(capsys):
    """The walk-throughs' apps (their other files are Kubernetes' own kinds: PVs, Prometheus)."""
    apps = sorted(ROOT.glob("examples/kubernetes*/wordcount.yaml"))
    assert len(apps) == 3 and main(["validate", *map(str, apps)]) == 0
    assert "StreamApp/kafka-wordcount is valid" in capsys.readouterr().out


def test_bad_manifest_names_the_field(tmp_path, capsys):
    doc, field, words = malformed("window-below-interval")
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc))
    assert main(["validate", str(bad)]) == 1
    assert f"{field}: {words}" in capsys.readouterr().out


def test_unreadable_yaml_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("spec: [unclosed\n")
    assert main(["validate", str(bad)]) == 2
    assert str(bad) in capsys.readouterr().err
