"""A Nimbus Thrift client (thriftpy2 over our subset of Storm's IDL, nimbus.thrift): rebalance, kill, the
topology's layout, per-executor statistics and workers, and Nimbus's configuration.

Rebalance goes through Thrift because the UI's REST rebalance ignores executor and worker counts (notes/storm.md).
Every call opens its own framed connection: Nimbus may restart, and a stale connection would hang a rebalance.
Errors: NimbusUnavailable (a ConnectionError: unreachable, timed out) and NimbusRefused (Nimbus said no: unknown
component, a rebalance already under way, not alive).
"""
from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass
from pathlib import Path

import thriftpy2
from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.rpc import make_client
from thriftpy2.thrift import TException
from thriftpy2.transport import TFramedTransportFactory, TTransportException

storm_thrift = thriftpy2.load(str(Path(__file__).with_name("nimbus.thrift")), module_name="storm_nimbus_thrift")


class NimbusUnavailable(ConnectionError):
    """Nimbus cannot be reached or did not answer in time."""


class NimbusRefused(NimbusUnavailable):
    """Nimbus answered with an error (the message is Nimbus's own)."""


@dataclass(frozen=True)
class Component:
    name: str
    executors: int
    tasks: int


@dataclass(frozen=True)
class TopologyState:
    id: str
    name: str
    status: str  # ACTIVE, INACTIVE, REBALANCING, KILLED
    workers: int
    components: tuple[Component, ...]  # user components only (no __acker, __system, __metrics...)
    errors: dict[str, str]  # component -> its newest error

    def executors(self) -> dict[str, int]:
        return {c.name: c.executors for c in self.components}


class NimbusClient:
    def __init__(self, host: str, port: int = 6627, timeout_s: float = 10.0):
        self.host, self.port, self.timeout_s = host, int(port), timeout_s

    def _call(self, method: str, *args):
        try:
            client = make_client(storm_thrift.Nimbus, self.host, self.port, timeout=int(self.timeout_s * 1000),
                                 trans_factory=TFramedTransportFactory(), proto_factory=TBinaryProtocolFactory())
        except (TTransportException, OSError) as err:
            raise NimbusUnavailable(f"Nimbus {self.host}:{self.port} unreachable: {err}") from err
        try:
            return getattr(client, method)(*args)
        except (storm_thrift.NotAliveException, storm_thrift.InvalidTopologyException,
                storm_thrift.AuthorizationException) as err:
            raise NimbusRefused(f"Nimbus refused {method}: {type(err).__name__}: {err.msg}") from err
        except (TTransportException, socket.timeout, OSError) as err:
            raise NimbusUnavailable(f"Nimbus {self.host}:{self.port} did not answer {method}: {err}") from err
        except TException as err:  # an application exception (e.g. an internal error in Nimbus)
            raise NimbusRefused(f"Nimbus failed {method}: {err}") from err
        finally:
            client.close()

    # --- reading ---
    def cluster(self):
        return self._call("getClusterInfo")

    def topology_id(self, name: str) -> str | None:
        for summary in self.cluster().topologies or []:
            if summary.name == name:
                return summary.id
        return None

    def info(self, name: str):
        """Nimbus's TopologyInfo (executors with their statistics) of the topology named `name`, or None."""
        topology_id = self.topology_id(name)
        return self.info_by_id(topology_id) if topology_id else None

    def info_by_id(self, topology_id: str):
        """TopologyInfo by id (one call; NimbusRefused when that topology is gone)."""
        return self._call("getTopologyInfo", topology_id)

    def workers_by_id(self, topology_id: str) -> list[tuple[str, str, int]]:
        """The topology's workers as (supervisor id, host, port): which supervisor runs each worker."""
        page = self._call("getTopologyPageInfo", topology_id, ":all-time", False)
        return [(w.supervisor_id, w.host, int(w.port)) for w in page.workers or []]

    def conf(self) -> dict:
        """Nimbus's own configuration (storm.yaml and defaults)."""
        return json.loads(self._call("getNimbusConf"))

    def graph_by_id(self, topology_id: str) -> dict[str, tuple[str, tuple[str, ...]]]:
        """component -> (kind, upstream components) of the submitted topology."""
        return wiring(self._call("getUserTopology", topology_id))

    def topology(self, name: str) -> TopologyState | None:
        """The topology's layout as Nimbus has it now, or None when no topology has that name."""
        info = self.info(name)
        return layout(info) if info is not None else None

    # --- acting ---
    def rebalance(self, name: str, *, executors: dict[str, int], workers: int | None, wait_s: int = 0,
                  conf_overrides: str | None = None) -> None:
        options = storm_thrift.RebalanceOptions(wait_secs=int(wait_s), num_executors=dict(executors) or None,
                                                num_workers=workers, topology_conf_overrides=conf_overrides)
        self._call("rebalance", name, options)

    def wait_rebalanced(self, name: str, *, executors: dict[str, int], workers: int | None,
                        timeout_s: float = 180.0, poll_s: float = 0.5) -> float:
        """Seconds until Nimbus shows the topology ACTIVE with these executors (and workers, where the free slots
        allow them): the rebalance's layout time. Raises TimeoutError naming what is still different."""
        t0, seen = time.monotonic(), None
        while time.monotonic() - t0 < timeout_s:
            seen = self.topology(name)
            if seen is not None and seen.status == "ACTIVE" and all(
                    seen.executors().get(c) == n for c, n in executors.items()):
                return time.monotonic() - t0
            time.sleep(poll_s)
        raise TimeoutError(f"topology {name} not rebalanced after {timeout_s:.0f}s: wanted executors {executors}, "
                           f"workers {workers}; Nimbus shows {seen}")

    def kill(self, name: str, wait_s: int = 0) -> None:
        self._call("killTopologyWithOpts", name, storm_thrift.KillOptions(wait_secs=int(wait_s)))


def layout(info) -> TopologyState:
    """TopologyState from a TopologyInfo: executors and tasks per user component, workers (distinct ports)."""
    executors: dict[str, int] = {}
    tasks: dict[str, int] = {}
    workers = set()
    for e in info.executors or []:
        if e.component_id is None or e.component_id.startswith("__"):
            continue
        executors[e.component_id] = executors.get(e.component_id, 0) + 1
        tasks[e.component_id] = tasks.get(e.component_id, 0) + e.executor_info.task_end - e.executor_info.task_start + 1
        workers.add((e.host, e.port))
    errors = {c: errs[-1].error.splitlines()[0] if errs[-1].error else "" for c, errs in (info.errors or {}).items()
              if errs}
    comps = tuple(Component(c, executors[c], tasks[c]) for c in sorted(executors))
    return TopologyState(info.id, info.name, info.status, len(workers), comps, errors)


def wiring(topology) -> dict[str, tuple[str, tuple[str, ...]]]:
    """component -> (kind, upstream components) from a StormTopology's inputs."""
    out = {}
    for kind, specs in (("spout", topology.spouts or {}), ("bolt", topology.bolts or {})):
        for name, spec in specs.items():
            inputs = (spec.common.inputs or {}) if spec.common else {}
            out[name] = (kind, tuple(sorted({s.componentId for s in inputs if not s.componentId.startswith("__")})))
    return out
