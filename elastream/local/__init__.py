"""The local mode: `elastream run FILE` runs a StreamApp's Spark job on this machine and keeps it elastic
with the same core, guards and Realizer as the operator — no Kubernetes."""
