"""elastream: a Kubernetes operator that keeps streaming jobs elastic."""
