"""Storm topologies run by elastream: a local cluster from Maven Central jars, the topologies and their
components, the Nimbus Thrift client, the Prometheus exporter and the verifier (what runs inside or beside Storm)."""
