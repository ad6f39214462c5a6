"""The committed CRDs are exactly what the models generate, and are structural."""
from elastream.api import crdgen
from tests.conftest import ROOT


def test_committed_crds_match_the_models():
    for name, text in crdgen.render().items():
        for directory in ("crds", "charts/elastream/crds"):
            committed = ROOT / directory / name
            assert committed.exists(), f"{directory}/{name} is missing: run `elastream crds`"
            assert committed.read_text() == text, f"{directory}/{name} is stale: run `elastream crds`"


def _walk(node, path="$"):
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            if k not in ("default", "x-kubernetes-validations"):
                yield from _walk(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, f"{path}[{i}]")


def test_schema_is_structural():
    for crd in (crdgen.streamapp_crd(), crdgen.policy_crd()):
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        for path, node in _walk(schema):
            if path.endswith(".properties") or path.endswith("$.required") or not isinstance(node, dict):
                continue
            assert not {"$ref", "anyOf", "allOf", "title"} & node.keys(), path
            if "properties" in node or "items" in node or "enum" in node:
                assert "type" in node, f"{path} has no type"


def test_scale_subresource_targets_desired_executors():
    version = crdgen.streamapp_crd()["spec"]["versions"][0]
    assert version["subresources"]["scale"]["specReplicasPath"] == ".spec.replicas"
    names = [c["name"] for c in version["additionalPrinterColumns"]]
    assert names[:6] == ["Engine", "Executors", "Desired", "Latency", "Phase", "Age"]
