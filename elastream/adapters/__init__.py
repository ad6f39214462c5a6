"""Adapters of the elasticity core's ports that need no Kubernetes: Prometheus, a /metrics scrape, the
runner's control endpoint. The operator (controllers/) and the local mode both use them."""
