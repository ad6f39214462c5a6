"""Which StreamApps this operator serves: all of those it watches, or, with $ELASTREAM_SHARD set, only those
labelled elastream.io/shard=<that value>. One operator process per shard (each its own Helm release with its own
peering name, so one replica per shard acts); shards beyond namespaces split one namespace's StreamApps."""
from __future__ import annotations

import os
from typing import Any, Mapping

SHARD_LABEL = "elastream.io/shard"


def current_shard() -> str:
    return os.environ.get("ELASTREAM_SHARD", "")


def in_shard(labels: Mapping[str, Any], **_: Any) -> bool:
    """kopf's `when` filter of every StreamApp handler (read at each event: relabelling moves an app)."""
    shard = current_shard()
    return not shard or labels.get(SHARD_LABEL) == shard
