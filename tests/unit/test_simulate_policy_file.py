"""`elastream simulate --policy-file`: a user's ElasticityPolicy manifest drives the simulation (its algorithm,
latency target, bounds, budget); advisor mode is simulated as auto; a bad file is refused with the field or the
file named, never a traceback."""
from elastream.cli import main

POLICY = """apiVersion: elastream.io/v1alpha1
kind: ElasticityPolicy
metadata: {{name: {name}}}
spec:
{spec}
"""
APP = """apiVersion: elastream.io/v1alpha1
kind: StreamApp
metadata: {name: wordcount}
spec: {}
"""


def _file(tmp_path, *docs):
    path = tmp_path / "policy.yaml"
    path.write_text("---\n".join(docs))
    return str(path)


def _policy(name="tight", **spec):
    lines = "\n".join(f"  {k}: {v}" for k, v in spec.items()) or "  {}"
    return POLICY.format(name=name, spec=lines)


def test_the_policys_settings_drive_the_simulation(tmp_path, capsys):
    path = _file(tmp_path, APP, _policy(mode="advisor", algorithm="ds2", latencyTarget="2s",
                                        bounds="{min: 1, max: 12}"))
    assert main(["simulate", "--scenario", "step", "--policy-file", path, "--decisions"]) == 0
    out = capsys.readouterr().out
    assert "ElasticityPolicy/tight is in advisor mode: simulated as auto" in out
    assert "scenario step · policy ds2" in out and "above the 2 s target" in out
    assert int(out.split("rescales")[1].split()[0]) >= 1  # advisor mode would never have rescaled
    assert "clamped 20→12 to [1, 12]" in out  # the policy's bounds cap what ds2 asks for


def test_an_explicit_policy_overrides_the_files_algorithm(tmp_path, capsys):
    path = _file(tmp_path, _policy(algorithm="ds2"))
    assert main(["simulate", "--scenario", "step", "--policy", "static", "--policy-file", path]) == 0
    out = capsys.readouterr().out
    assert "policy static" in out and "rescales        0" in out


def test_a_bad_policy_file_is_refused_naming_the_field_or_the_file(tmp_path, capsys):
    bad = _file(tmp_path, _policy(latencyTarget="soon"))
    assert main(["simulate", "--scenario", "step", "--policy-file", bad]) == 2
    assert "spec.latencyTarget" in capsys.readouterr().err
    none = _file(tmp_path, APP)
    assert main(["simulate", "--scenario", "step", "--policy-file", none]) == 2
    assert "no ElasticityPolicy manifest (found: StreamApp)" in capsys.readouterr().err
    nameless = _file(tmp_path, "just text\n")
    assert main(["simulate", "--scenario", "step", "--policy-file", nameless]) == 2
    assert "no ElasticityPolicy manifest (found: a document with no kind)" in capsys.readouterr().err
    two = _file(tmp_path, _policy("a"), _policy("b"))
    assert main(["simulate", "--scenario", "step", "--policy-file", two]) == 2
    assert "2 ElasticityPolicy manifests (a, b)" in capsys.readouterr().err
    assert main(["simulate", "--scenario", "step", "--policy-file", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml" in capsys.readouterr().err
