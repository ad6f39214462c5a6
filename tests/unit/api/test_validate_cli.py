"""`elastream validate` reports each problem with its field, and exits non-zero."""
import contextlib
import io

import yaml

from elastream.cli import main
from tests.conftest import ROOT
from tests.manifests import malformed


def validated(tmp_path, text: str) -> tuple[int, str]:
    """(exit status, stdout) of `elastream validate` on a file holding text."""
    path = tmp_path / "manifest.yaml"
    path.write_text(text)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["validate", str(path)])
    return code, out.getvalue()


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


def test_other_apis_objects_are_listed_as_not_checked(capsys):
    """A walk-through's whole folder validates: its Namespace, Deployment and PVs are named, not failed."""
    files = sorted((ROOT / "examples" / "kubernetes").glob("*.yaml"))
    assert main(["validate", *map(str, files)]) == 0
    out = capsys.readouterr().out
    assert "Namespace/monitoring is not an elastream object: not checked" in out
    assert "StreamApp/wordcount is valid" in out


def test_a_list_is_checked_item_by_item(tmp_path, capsys):
    good = yaml.safe_load((ROOT / "examples" / "wordcount.yaml").read_text().split("\n---\n")[0])
    doc, field, words = malformed("window-below-interval")
    listed = tmp_path / "list.yaml"
    listed.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [good, doc]}))
    assert main(["validate", str(listed)]) == 1
    out = capsys.readouterr().out
    assert f"{good['kind']}/{good['metadata']['name']} is valid" in out and f"{field}: {words}" in out


def test_a_typo_in_an_elastream_kind_is_still_an_error(tmp_path):
    code, out = validated(tmp_path, "apiVersion: elastream.io/v1alpha1\nkind: StreamAp\nmetadata: {name: a}\nspec: {}\n")
    assert code == 1 and "kind: must be one of" in out


def test_a_missing_api_version_is_required_not_none(tmp_path):
    code, out = validated(tmp_path, "kind: StreamApp\nmetadata: {name: a}\nspec: {}\n")
    assert code == 1
    assert "apiVersion: Required value (it must be elastream.io/v1alpha1)" in out and "None" not in out


def test_a_file_with_no_object_fails(tmp_path, capsys):
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing yet\n---\n")
    assert main(["validate", str(empty)]) == 1
    assert "no objects in the file" in capsys.readouterr().out


def test_an_endless_file_is_refused_at_the_size_limit(capsys):
    """/dev/zero never ends: the reading stops at the API server's request limit instead of filling memory."""
    assert main(["validate", "/dev/zero"]) == 2
    assert "larger than 3 MiB" in capsys.readouterr().err


POLICY_OUTSIDE_THE_APP = """\
apiVersion: elastream.io/v1alpha1
kind: ElasticityPolicy
metadata: {name: big}
spec:
  bounds: {min: 8, max: 10}
---
apiVersion: elastream.io/v1alpha1
kind: StreamApp
metadata: {name: wc}
spec:
  engine: spark
  policyRef: {name: big}
  spark:
    application: {builtin: wordcount}
    executors: {initial: 1, min: 1, max: 4}
"""


def test_a_referenced_policy_whose_bounds_miss_the_app_fails_as_the_operator_would(tmp_path, capsys):
    both = tmp_path / "both.yaml"
    both.write_text(POLICY_OUTSIDE_THE_APP)
    assert main(["validate", str(both)]) == 1
    out = capsys.readouterr().out
    assert "StreamApp/wc with ElasticityPolicy/big: spec.bounds 8..10 of the policy does not overlap the app's " \
           "range 1..4" in out and "InvalidSpec" in out
    both.write_text(POLICY_OUTSIDE_THE_APP.replace("{min: 8, max: 10}", "{min: 2, max: 10}")
                    .replace("name: big", "name: big.v2"))  # a policy's name is a subdomain: its ref may have dots
    assert main(["validate", str(both)]) == 0


def test_an_invalid_referenced_policy_is_named_once_not_as_missing(tmp_path, capsys):
    bad = tmp_path / "nan.yaml"
    bad.write_text((ROOT / "examples" / "wordcount.yaml").read_text().replace("targetUtilization: 0.7",
                                                                            "targetUtilization: .nan"))
    assert ".nan" in bad.read_text() and main(["validate", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "spec.targetUtilization: Invalid value: nan: must be a finite number" in out
    assert "in none of the files" not in out


def test_a_list_where_a_word_belongs_is_named_as_an_array(tmp_path):
    code, out = validated(tmp_path, "apiVersion: elastream.io/v1alpha1\nkind: StreamApp\nmetadata: {name: a}\n"
                                    "spec:\n  engine: [x]\n")
    assert code == 1 and 'spec.engine: Invalid value: "array": supported values: "spark", "storm"' in out


def test_the_same_object_twice_is_a_warning(tmp_path, capsys):
    example = (ROOT / "examples" / "wordcount.yaml").read_text()
    twice = tmp_path / "twice.yaml"
    twice.write_text(example + "\n---\n" + example)
    assert main(["validate", str(twice)]) == 0
    out = capsys.readouterr().out
    assert "warning: StreamApp/wordcount is given again" in out and "kubectl apply keeps only the last" in out


def test_a_yaml_error_is_one_line_with_the_file_line_and_column(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: b: c\n")
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"{bad}:1:5: not valid YAML: mapping values are not allowed here"


def test_simulate_names_the_policy_file_of_an_invalid_manifest(tmp_path, capsys):
    bad = tmp_path / "policy.yaml"
    bad.write_text((ROOT / "examples" / "wordcount.yaml").read_text().replace("targetUtilization: 0.7",
                                                                            "targetUtilization: 7"))
    assert main(["simulate", "--scenario", "step", "--policy-file", str(bad)]) == 2
    assert f"{bad}: ElasticityPolicy 'latency-10s' is invalid" in capsys.readouterr().err


def _example_with_namespaces(policy_ns: str | None, app_ns: str | None) -> str:
    policy, app = yaml.safe_load_all((ROOT / "examples" / "wordcount.yaml").read_text())
    for doc, ns in ((policy, policy_ns), (app, app_ns)):
        if ns:
            doc["metadata"]["namespace"] = ns
    return yaml.safe_dump_all([policy, app])


def test_a_policy_in_another_namespace_is_not_the_apps(tmp_path):
    code, out = validated(tmp_path, _example_with_namespaces("team-a", "team-b"))
    assert code == 0, out  # each object is valid: a warning, as for a policy in no file
    assert "ElasticityPolicy 'latency-10s' is only in namespace team-a, not the app's (team-b)" in out


def test_a_policy_with_no_namespace_goes_where_the_app_goes(tmp_path):
    code, out = validated(tmp_path, _example_with_namespaces(None, "team-b"))
    assert code == 0 and "warning" not in out, out


def test_an_empty_list_has_no_objects(tmp_path):
    code, out = validated(tmp_path, "apiVersion: v1\nkind: List\nitems: []\n")
    assert code == 1 and "no objects in the file" in out


def _app_with_conf(kib: int) -> dict:
    policy, app = yaml.safe_load_all((ROOT / "examples" / "wordcount.yaml").read_text())
    app["spec"]["spark"]["conf"] = {f"spark.elastream.pad{i}": "x" * 4000 for i in range(kib // 4)}
    return app


def test_an_app_too_large_for_client_side_apply_is_warned_of(tmp_path):
    code, out = validated(tmp_path, yaml.safe_dump(_app_with_conf(300)))
    assert code == 0 and "StreamApp/wordcount is valid" in out, out
    assert "last-applied-configuration" in out and "--server-side" in out


def test_annotations_past_256_kib_are_refused(tmp_path):
    doc = _app_with_conf(0)
    doc["metadata"]["annotations"] = {f"note{i}": "y" * 60000 for i in range(5)}
    code, out = validated(tmp_path, yaml.safe_dump(doc))
    assert code == 1 and "metadata.annotations: Too long: may not be more than 262144 bytes" in out, out


def test_odd_metadata_and_timestamps_never_crash_validate(tmp_path):
    code, out = validated(tmp_path, "apiVersion: elastream.io/v1alpha1\nkind: ElasticityPolicy\n"
                                    "metadata: {name: p, namespace: [a]}\nspec: {}\n")
    assert code == 1 and "metadata.namespace" in out
    stamped = "metadata:\n  creationTimestamp: 2024-01-01T00:00:00Z\n"  # unquoted: YAML reads a datetime
    code, out = validated(tmp_path, yaml.safe_dump(_app_with_conf(0)).replace("metadata:\n", stamped))
    assert code == 0 and "is valid" in out, out


def test_the_size_warning_counts_the_annotations_already_there(tmp_path):
    doc = _app_with_conf(0)
    doc["metadata"]["annotations"] = {"note": "é" * 90000}  # 180 KB as UTF-8: allowed, but no room for a copy
    code, out = validated(tmp_path, yaml.safe_dump(doc, allow_unicode=True))
    assert code == 0 and "last-applied-configuration" in out, out
