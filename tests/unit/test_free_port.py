"""free_port() hands out ports a daemon binds later: outside the kernel's ephemeral range (where an outgoing
connection or a bind to port 0 could take it first) and never twice."""
import socket

from spark_apps.cluster import _port_range, free_port


def test_ports_are_distinct_bindable_and_below_the_ephemeral_range():
    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)
    low, top = _port_range()
    assert all(low <= p < top <= 32768 for p in ports)
    with socket.socket() as s:  # free: the caller can bind it
        s.bind(("127.0.0.1", ports[-1]))


def test_a_port_in_use_is_skipped(monkeypatch):
    import spark_apps.cluster as cluster

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        draws, real = [taken], cluster.random.randrange  # the held port first, then real draws
        monkeypatch.setattr(cluster.random, "randrange", lambda lo, hi: draws.pop() if draws else real(lo, hi))
        monkeypatch.setattr(cluster, "_HANDED_OUT", set())
        assert free_port() != taken
