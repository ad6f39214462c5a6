"""A real Kafka broker on this machine (KRaft, from Maven Central's jars): for the Nexmark workload and for tests."""
