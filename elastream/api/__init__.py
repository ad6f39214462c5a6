"""The elastream API (group elastream.io, version v1alpha1): the single source of truth for the CRDs."""
GROUP = "elastream.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
