"""The KRaft cluster id given to Kafka's storage tool: a valid id that the tool's argument parser cannot mistake for an
option (a leading '-' made 1 in 64 broker starts fail to format)."""
import base64
import uuid
from unittest import mock

from kafka_broker.broker import cluster_id


def test_a_cluster_id_is_16_bytes_of_url_safe_base64():
    decoded = base64.urlsafe_b64decode(cluster_id() + "==")
    assert len(decoded) == 16


def test_an_id_that_would_start_with_a_dash_is_drawn_again():
    dash_first = uuid.UUID(bytes=b"\xf8" + bytes(15))  # base64 of 0xf8... is "-A..."
    assert base64.urlsafe_b64encode(dash_first.bytes).decode().startswith("-")
    plain = uuid.UUID(bytes=bytes(16))
    with mock.patch("kafka_broker.broker.uuid.uuid4", side_effect=[dash_first, plain]):
        assert cluster_id() == "AAAAAAAAAAAAAAAAAAAAAA"
