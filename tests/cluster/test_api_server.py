"""The CRDs on a real kube-apiserver: examples apply, printer columns show, bad manifests are rejected
with a message naming the field, and `kubectl scale` drives the desired executor count."""
import json

import pytest
import yaml

from tests.conftest import ROOT
from tests.manifests import MALFORMED, example, malformed


def table_row(table: str) -> dict[str, str]:
    """The first row of a kubectl table, by column header (cells may be empty)."""
    header, row = table.splitlines()[:2]
    starts = [i for i, ch in enumerate(header) if ch != " " and (i == 0 or header[i - 1] == " ")]
    bounds = list(zip(starts, starts[1:] + [None]))
    return {header[a:b].strip(): row[a:b].strip() for a, b in bounds}


def test_examples_apply_and_show_columns(crds_installed, namespace):
    k = crds_installed
    k.kubectl("apply", "-n", namespace, "-f", str(ROOT / "examples"))
    table = k.kubectl("get", "streamapps", "-n", namespace).stdout.splitlines()
    assert table[0].split() == ["NAME", "ENGINE", "EXECUTORS", "DESIRED", "LATENCY", "PHASE", "AGE"]
    rows = {line.split()[0]: line.split() for line in table[1:]}
    assert rows["wordcount"][1] == "spark" and rows["storm-wordcount"][1] == "storm"
    policies = k.kubectl("get", "elasticitypolicies", "-n", namespace).stdout.splitlines()
    assert policies[0].split()[:4] == ["NAME", "MODE", "ALGORITHM", "TARGET"]
    assert policies[1].split()[:4] == ["latency-10s", "auto", "elastream", "10s"]


def test_api_server_fills_defaults(crds_installed, namespace):
    k = crds_installed
    k.kubectl("apply", "-n", namespace, "-f", str(ROOT / "examples" / "wordcount.yaml"))
    policy = json.loads(k.kubectl("get", "elasticitypolicy", "latency-10s", "-n", namespace, "-o", "json").stdout)
    assert policy["spec"]["metricsWindow"] == "1m"  # from the file
    assert policy["spec"]["catchUpDuration"] == "5m"  # defaulted by the API server
    assert policy["spec"]["metrics"]["prometheus"]["queries"]["backlog"].startswith("sum(")
    app = json.loads(k.kubectl("get", "streamapp", "wordcount", "-n", namespace, "-o", "json").stdout)
    assert app["spec"]["suspend"] is False and app["spec"]["spark"]["image"]


@pytest.mark.parametrize("case_id", [c[0] for c in MALFORMED])
def test_malformed_rejected_by_api_server(crds_installed, namespace, case_id):
    doc, field, words = malformed(case_id)
    proc = crds_installed.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(doc), check=False)
    assert proc.returncode != 0, f"{case_id} was accepted"
    # a rule or schema error names the field itself; an unknown field (strict decoding) a path under it
    problem = [line for line in proc.stderr.splitlines()
               if field + ":" in line or f'"{field}"' in line or f'"{field}.' in line]
    assert problem, f"the error does not name {field}:\n{proc.stderr}"
    assert any(words.lower() in line.lower() for line in problem), proc.stderr
    assert crds_installed.kubectl("get", doc["kind"].lower(), "-n", namespace, "-o", "name").stdout.strip() == ""


def test_unknown_field_rejected(crds_installed, namespace):
    doc = example("StreamApp")
    doc["spec"]["spark"]["executorz"] = 3
    proc = crds_installed.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(doc), check=False)
    assert proc.returncode != 0 and 'unknown field "spec.spark.executorz"' in proc.stderr, proc.stderr


def test_kubectl_scale_sets_desired_executors(crds_installed, namespace):
    k = crds_installed
    k.kubectl("apply", "-n", namespace, "-f", str(ROOT / "examples" / "wordcount.yaml"))
    k.kubectl("scale", "streamapp/wordcount", "--replicas=2", "-n", namespace)
    app = json.loads(k.kubectl("get", "streamapp", "wordcount", "-n", namespace, "-o", "json").stdout)
    assert app["spec"]["replicas"] == 2
    scale = json.loads(k.kubectl("get", "--raw",
                                 f"/apis/elastream.io/v1alpha1/namespaces/{namespace}/streamapps/wordcount/scale").stdout)
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 2
    assert table_row(k.kubectl("get", "streamapp", "wordcount", "-n", namespace).stdout)["DESIRED"] == "2"
    # beyond spark.executors.max (2): rejected by the CEL rule, nothing changes
    proc = k.kubectl("scale", "streamapp/wordcount", "--replicas=7", "-n", namespace, check=False)
    assert proc.returncode != 0 and "spec.replicas" in proc.stderr, proc.stderr
    app = json.loads(k.kubectl("get", "streamapp", "wordcount", "-n", namespace, "-o", "json").stdout)
    assert app["spec"]["replicas"] == 2


def test_status_subresource_is_separate(crds_installed, namespace):
    k = crds_installed
    k.kubectl("apply", "-n", namespace, "-f", str(ROOT / "examples" / "wordcount.yaml"))
    patch = {"status": {"phase": "Running", "currentExecutors": 2, "latencyP99Seconds": 1.25,
                        "conditions": [{"type": "Ready", "status": "True", "reason": "Running", "message": "ok",
                                        "lastTransitionTime": "2026-11-22T00:00:00Z"}]}}
    k.kubectl("patch", "streamapp", "wordcount", "-n", namespace, "--subresource=status", "--type=merge",
              "-p", json.dumps(patch))
    row = table_row(k.kubectl("get", "streamapp", "wordcount", "-n", namespace).stdout)
    assert (row["ENGINE"], row["EXECUTORS"], row["DESIRED"], row["LATENCY"], row["PHASE"]) == ("spark", "2", "", "1.25", "Running")
    bad = {"status": {"conditions": [{"type": "Happy", "status": "True", "reason": "X",
                                      "lastTransitionTime": "2026-11-22T00:00:00Z"}]}}
    proc = k.kubectl("patch", "streamapp", "wordcount", "-n", namespace, "--subresource=status", "--type=merge",
                     "-p", json.dumps(bad), check=False)
    assert proc.returncode != 0 and "status.conditions[0].type" in proc.stderr, proc.stderr


def test_what_validate_says_of_size_is_what_the_api_server_does(crds_installed, namespace, tmp_path):
    """A 300 KiB app: client-side `kubectl apply` fails (its last-applied annotation is over 256 KiB), server-side
    apply stores it — as `elastream validate` warns; annotations past 256 KiB are refused, as validate says."""
    from tests.unit.api.test_validate_cli import _app_with_conf, validated

    big = _app_with_conf(300)
    text = yaml.safe_dump(big)
    code, out = validated(tmp_path, text)
    assert code == 0 and "last-applied-configuration" in out, out
    k = crds_installed
    proc = k.kubectl("apply", "-n", namespace, "-f", "-", input=text, check=False)
    assert proc.returncode != 0 and "metadata.annotations: Too long" in proc.stderr, proc.stderr
    k.kubectl("apply", "--server-side", "-n", namespace, "-f", "-", input=text)
    assert k.kubectl("get", "streamapp", "wordcount", "-n", namespace, "-o", "name").stdout.strip()
    noted = _app_with_conf(0)
    noted["metadata"]["name"] = "noted"
    noted["metadata"]["annotations"] = {f"note{i}": "y" * 60000 for i in range(5)}
    proc = k.kubectl("create", "-n", namespace, "-f", "-", input=yaml.safe_dump(noted), check=False)
    assert proc.returncode != 0 and "metadata.annotations: Too long: may not be more than 262144 bytes" in proc.stderr, \
        proc.stderr
