"""A Storm app's reconcile pass. Attached: nothing to create, Progressing says which Nimbus. Managed (ZooKeeper,
Nimbus and supervisors as pods): see elastream.engines.storm.managed."""
from __future__ import annotations

from typing import Any

from controllers.status import not_supported_status
from elastream.api.streamapp import StreamAppSpec
from elastream.engines.base import Reconciled
from elastream.engines.spark.kubernetes import attached

MANAGED_MESSAGE = ("spec.storm.attach is not set, and running Storm's daemons as pods is not implemented yet: "
                   "attach the app to a Storm cluster (docs/storm.md)")


def reconcile(body: dict[str, Any], spec: StreamAppSpec, *, all_objects: bool) -> Reconciled:
    generation = body["metadata"].get("generation", 0)
    attach = spec.storm.attach
    if attach is not None:
        return attached(spec, f"nimbus {attach.nimbus_host}:{attach.nimbus_port}, topology "
                        f"{spec.storm.topology_name(body['metadata']['name'])}", generation)
    return Reconciled([MANAGED_MESSAGE], lambda st: not_supported_status(st, MANAGED_MESSAGE, generation))
