"""How the operator registers with kopf: no finalizer on StreamApps (deleting one never needs a running operator)
and a worker pool sized for one long-lived loop per StreamApp."""
import logging

import kopf

import controllers.operator_settings as operator_settings
import controllers.streamapp  # noqa: F401  (registers the handlers)


def _streamapp_handlers(registry):
    return [h for h in registry.get_all_handlers() if getattr(h.fn, "__module__", "") == "controllers.streamapp"]


def test_no_streamapp_handler_requires_a_finalizer():
    registry = kopf.get_default_registry()
    spawning = _streamapp_handlers(registry._spawning)
    assert [h.fn.__name__ for h in spawning] == ["supervise"]
    assert not any(h.requires_finalizer for h in spawning + _streamapp_handlers(registry._changing))


def test_worker_pool_size_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("ELASTREAM_METRICS_PORT", "0")
    settings = kopf.OperatorSettings()
    operator_settings.configure(settings=settings, logger=logging.getLogger("test"))
    assert settings.execution.max_workers == 200
    monkeypatch.setenv("ELASTREAM_MAX_WORKERS", "32")
    operator_settings.configure(settings=settings, logger=logging.getLogger("test"))
    assert settings.execution.max_workers == 32
