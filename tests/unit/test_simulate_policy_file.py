"""`elastream simulate --policy-file`: a user's manifests drive the simulation — a StreamApp's policy as the operator
resolves it (with the app's bounds), or a lone ElasticityPolicy (its algorithm, latency target, bounds, budget);
advisor mode is simulated as auto; a bad file is refused with the field or the file named, never a traceback."""
from pathlib import Path

from elastream.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "wordcount.yaml"  # StreamApp + its referenced policy

POLICY = """apiVersion: elastream.io/v1alpha1
kind: ElasticityPolicy
metadata: {{name: {name}}}
spec:
{spec}
"""


def _file(tmp_path, *docs):
    path = tmp_path / "policy.yaml"
    path.write_text("---\n".join(docs))
    return str(path)


def _policy(name="tight", **spec):
    lines = "\n".join(f"  {k}: {v}" for k, v in spec.items()) or "  {}"
    return POLICY.format(name=name, spec=lines)


def test_the_policys_settings_drive_the_simulation(tmp_path, capsys):
    path = _file(tmp_path, _policy(mode="advisor", algorithm="ds2", latencyTarget="2s", bounds="{min: 1, max: 12}"))
    assert main(["simulate", "--scenario", "step", "--policy-file", path, "--decisions"]) == 0
    out = capsys.readouterr().out
    assert "policy tight is in advisor mode: simulated as auto" in out
    assert "scenario step · policy ds2" in out and "above the 2 s target" in out
    assert int(out.split("rescales")[1].split()[0]) >= 1  # advisor mode would never have rescaled
    # the policy's bounds cap the job: it starts within them (as deployed, enrich would take 20) and stays there
    assert "(8→10 12→12 12→12)" in out
    assert "over capacity   the load peaks at" in out and "at max parallelism 12" in out


def test_a_streamapp_runs_with_the_policy_it_references_and_the_apps_bounds(capsys):
    assert main(["simulate", "--scenario", "step", "--policy-file", str(EXAMPLE), "--decisions"]) == 0
    out = capsys.readouterr().out
    assert "settings of policy latency-10s (StreamApp/wordcount)" in out and "above the 10 s target" in out
    # its executors' range (1..2) bounds the job: it starts at 2 a stage, which cannot carry the step's load
    assert "at max parallelism 2 (and its key groups) the job carries at most 300" in out


def test_an_explicit_policy_overrides_the_files_algorithm(tmp_path, capsys):
    path = _file(tmp_path, _policy(algorithm="ds2"))
    assert main(["simulate", "--scenario", "step", "--policy", "static", "--policy-file", path]) == 0
    out = capsys.readouterr().out
    assert "policy static" in out and "rescales        0" in out


def test_a_bad_policy_file_is_refused_naming_the_field_or_the_file(tmp_path, capsys):
    bad = _file(tmp_path, _policy(latencyTarget="soon"))
    assert main(["simulate", "--scenario", "step", "--policy-file", bad]) == 2
    assert "spec.latencyTarget" in capsys.readouterr().err
    empty = _file(tmp_path, "# nothing here\n")
    assert main(["simulate", "--scenario", "step", "--policy-file", empty]) == 2
    assert "0 ElasticityPolicy manifests and no StreamApp" in capsys.readouterr().err
    nameless = _file(tmp_path, "just text\n")
    assert main(["simulate", "--scenario", "step", "--policy-file", nameless]) == 2
    assert "must be a mapping" in capsys.readouterr().err
    two = _file(tmp_path, _policy("a"), _policy("b"))
    assert main(["simulate", "--scenario", "step", "--policy-file", two]) == 2
    assert "2 ElasticityPolicy manifests (a, b) and no StreamApp" in capsys.readouterr().err
    assert main(["simulate", "--scenario", "step", "--policy-file", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml" in capsys.readouterr().err
