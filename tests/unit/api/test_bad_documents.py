"""Whole documents gone wrong — odd metadata and kinds, names the API server refuses, duplicate keys, alias bombs,
deep nesting, huge values — and a hypothesis fuzz of the parser: never a traceback or a hang, always a field named."""
from __future__ import annotations

import copy
import time

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from elastream.api import API_VERSION
from elastream.api.manifests import ManifestError, parse_manifest
from elastream.api.safe_yaml import ManifestYAMLError, load_all
from elastream.cli import main
from tests.manifests import example

APP = example("StreamApp")


def problems_of(doc) -> list[str]:
    with pytest.raises(ManifestError) as err:
        parse_manifest(doc)
    return err.value.problems


def with_top(**changes):
    doc = copy.deepcopy(APP)
    doc.update(changes)
    return doc


@pytest.mark.parametrize("metadata", ["wordcount", ["wordcount"], 7, True])
def test_metadata_that_is_not_a_mapping_is_named(metadata):
    assert any(p.startswith("metadata:") for p in problems_of(with_top(metadata=metadata)))


@pytest.mark.parametrize("kind", [["StreamApp"], {"a": 1}, 3, None, "Streamapp"])
def test_kind_of_any_type_is_named(kind):
    assert any(p.startswith("kind:") for p in problems_of(with_top(kind=kind)))


@pytest.mark.parametrize("name", ["WordCount", "word_count", "word\u2010count", "word\u2013count", "-wc", "wc-",
                                  "a" * 254, "wörd", "word count", 42])
def test_names_the_api_server_refuses(name):
    assert any(p.startswith("metadata.name:") for p in problems_of(with_top(metadata={"name": name})))


@pytest.mark.parametrize("name", ["wordcount", "word-count.v2", "a" * 253, "0wc"])
def test_dns_subdomain_names_pass_for_a_policy(name):
    policy = {"apiVersion": API_VERSION, "kind": "ElasticityPolicy", "metadata": {"name": name}, "spec": {}}
    assert parse_manifest(policy)[1] == name


@pytest.mark.parametrize("name", ["wordcount", "word-count-v2", "w" * 53, "wc0"])
def test_dns_label_names_pass_for_a_streamapp(name):
    assert parse_manifest(with_top(metadata={"name": name}))[1] == name


@pytest.mark.parametrize("name", ["word-count.v2", "w" * 54, "0wc"])
def test_streamapp_names_its_services_could_not_take_are_refused(name):
    problems = [p for p in problems_of(with_top(metadata={"name": name})) if p.startswith("metadata.name:")]
    assert len(problems) == 1 and "-zookeeper" in problems[0] and "at most 53" in problems[0], problems


def test_bad_namespace_and_labels_are_named():
    problems = problems_of(with_top(metadata={"name": "wc", "namespace": "Prod_1", "labels": {"a": 1}}))
    assert any(p.startswith("metadata.namespace:") for p in problems)
    assert any(p.startswith("metadata.labels:") for p in problems)


@pytest.mark.parametrize("spec", [[1, 2], "spark", 3])
def test_spec_that_is_not_a_mapping_is_named(spec):
    assert any(p.startswith("spec:") for p in problems_of(with_top(spec=spec)))


def test_unknown_top_level_field_and_bad_api_version_are_named():
    problems = problems_of(with_top(specs={}, apiVersion={"v": 1}))
    assert any("specs" in p for p in problems) and any(p.startswith("apiVersion:") for p in problems)


@pytest.mark.parametrize("doc", [[], "text", 5, None])
def test_a_document_that_is_not_a_mapping_is_refused(doc):
    assert problems_of(doc)


def test_a_huge_value_is_quoted_short():
    doc = copy.deepcopy(APP)
    doc["spec"]["engine"] = "x" * 1_000_000
    assert max(len(p) for p in problems_of(doc)) < 300


def test_duplicate_keys_are_refused_with_both_lines():
    text = "a: 1\nspec:\n  engine: spark\n  engine: storm\n"
    with pytest.raises(ManifestYAMLError, match=r"line 4.*'engine' already defined at line 3"):
        list(load_all(text))


def test_merge_keys_may_be_overridden():
    docs = list(load_all("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  x: 3\n"))
    assert docs[0]["other"] == {"x": 3, "y": 2}


def test_an_alias_bomb_is_refused_quickly():
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]")
    lines.append("apiVersion: elastream.io/v1alpha1\nkind: ElasticityPolicy\nmetadata: {name: p}\nspec: {mode: *a9}")
    t0 = time.monotonic()
    with pytest.raises(ManifestYAMLError, match="expands to more than"):
        list(load_all("\n".join(lines)))
    assert time.monotonic() - t0 < 5


def test_validate_reports_yaml_bombs_deep_nesting_and_duplicates_without_a_traceback(tmp_path, capsys):
    files = {"dup.yaml": "spec: {a: 1, a: 2}\n", "deep.yaml": "x: " + "[" * 5000 + "]" * 5000 + "\n",
             "binary.yaml": b"\xff\xfe\x00garbage"}
    paths = []
    for name, text in files.items():
        path = tmp_path / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        paths.append(str(path))
    assert main(["validate", *paths]) == 2
    err = capsys.readouterr().err
    assert "already defined" in err and "deep.yaml" in err and "binary.yaml" in err and "Traceback" not in err


def test_validate_warns_about_a_policy_ref_it_cannot_find(tmp_path, capsys):
    path = tmp_path / "app.yaml"
    doc = copy.deepcopy(APP)
    doc["spec"]["policyRef"] = {"name": "missing"}
    path.write_text(yaml.safe_dump(doc))
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "warning" in out and "spec.policyRef.name" in out and "'missing'" in out


# --- fuzz: random documents and random mutations of the examples ----------------------------------------------

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=True),
                    st.text(max_size=40), st.sampled_from(["1g", "1.5g", "0s", "9999999999h", "spark", "storm",
                                                            "wordcount", "yes", "2", "-1", "", "\u2010"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=12), inner, max_size=4)),
                      max_leaves=12)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))


@st.composite
def mutated_examples(draw):
    doc = copy.deepcopy(draw(st.sampled_from([example("StreamApp"), example("ElasticityPolicy")])))
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        path = draw(st.sampled_from(paths))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        if not isinstance(parent, dict):
            break
        if draw(st.booleans()):
            parent[path[-1]] = draw(values)
        else:
            parent.pop(path[-1], None)
    return doc


def _check(doc) -> None:
    try:
        parse_manifest(doc)
    except ManifestError as err:
        assert err.problems, "rejected without a reason"
        for line in err.problems:
            field = line.split(":", 1)[0]
            assert field and " " not in field.strip() or line.startswith("unknown field"), line
            assert len(line) < 1200, line[:200]


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated_examples())
def test_fuzz_mutated_examples_never_crash_and_name_a_field(doc):
    _check(doc)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(values, st.dictionaries(st.sampled_from(["apiVersion", "kind", "metadata", "spec", "status", "x"]),
                                         values, max_size=6)))
def test_fuzz_random_documents_never_crash(doc):
    _check(doc)
