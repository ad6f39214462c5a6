"""examples/kubernetes-kafka/kafka.yaml: the walk-through's broker runs the project's Kafka image with the local
mode's own server.properties, so the two cannot drift apart."""
from __future__ import annotations

import sys

import yaml

from kafka_broker.broker import server_properties
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts" / "images"))
from imagebuild.specs import IMAGES  # noqa: E402

KAFKA_YAML = ROOT / "examples" / "kubernetes-kafka" / "kafka.yaml"


def docs() -> dict[str, dict]:
    return {d["kind"]: d for d in yaml.safe_load_all(KAFKA_YAML.read_text()) if d}


def test_the_broker_reads_the_local_modes_server_properties_advertising_its_pod_ip():
    data = docs()["ConfigMap"]["data"]
    assert data["server.properties"] == server_properties(
        listen_host="0.0.0.0", advertised_host="@POD_IP@", port=9092, controller_port=9093,
        data_dir="/var/lib/kafka/data")


def test_the_pod_runs_the_projects_kafka_image_as_a_non_root_user_and_the_service_selects_it():
    found = docs()
    (container,) = found["Pod"]["spec"]["containers"]
    assert container["image"] == IMAGES["kafka"].ref
    assert found["Pod"]["spec"]["securityContext"]["runAsNonRoot"] is True
    env = {e["name"] for e in container["env"]}
    assert {"POD_IP", "CLUSTER_ID"} <= env
    assert found["Service"]["spec"]["selector"].items() <= found["Pod"]["metadata"]["labels"].items()
    assert found["Service"]["spec"]["ports"][0]["port"] == container["ports"][0]["containerPort"] == 9092
