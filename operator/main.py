"""The elastream operator process: `kopf run operator/main.py [--all-namespaces | -n NS] [--peering NAME]`.

Registers the StreamApp and ElasticityPolicy handlers and the operator's kopf settings (progress kept in
annotations because the status schema is ours, events posted, peering, the operator's own /metrics).
"""
import controllers.operator_settings  # noqa: F401  (registers login and startup handlers)
import controllers.policy  # noqa: F401  (registers handlers)
import controllers.streamapp  # noqa: F401
import controllers.webhook  # noqa: F401  (the placement webhook; served only with a certificate)
