"""How the operator registers with kopf: no finalizer on StreamApps (deleting one never needs a running operator)
and loops that hold no thread while they wait."""
import inspect
import logging

import pytest

import kopf

import controllers.operator_settings as operator_settings
import controllers.streamapp  # noqa: F401  (registers the handlers)
from controllers.lanes import LaneSizes, lanes


def _streamapp_handlers(registry):
    return [h for h in registry.get_all_handlers() if getattr(h.fn, "__module__", "") == "controllers.streamapp"]


def test_no_streamapp_handler_requires_a_finalizer():
    registry = kopf.get_default_registry()
    spawning = _streamapp_handlers(registry._spawning)
    assert [h.fn.__name__ for h in spawning] == ["supervise"]
    assert not any(h.requires_finalizer for h in spawning + _streamapp_handlers(registry._changing))


def test_lane_sizes_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("ELASTREAM_METRICS_PORT", "0")
    settings = kopf.OperatorSettings()
    operator_settings.configure(settings=settings, logger=logging.getLogger("test"))
    assert (lanes().sizes.fast, lanes().sizes.slow) == (16, 32)
    monkeypatch.setenv("ELASTREAM_WORKERS", "4")
    monkeypatch.setenv("ELASTREAM_SLOW_WORKERS", "2")
    operator_settings.configure(settings=settings, logger=logging.getLogger("test"))
    assert (lanes().sizes.fast, lanes().sizes.slow, settings.execution.max_workers) == (4, 2, 4)


def test_a_worker_count_below_one_is_refused(monkeypatch):
    monkeypatch.setenv("ELASTREAM_WORKERS", "0")
    with pytest.raises(ValueError, match=r"\$ELASTREAM_WORKERS must be at least 1"):
        LaneSizes.from_environment()


def test_the_streamapp_loop_is_a_coroutine():
    """A sync daemon holds a thread for its StreamApp's lifetime: the pool would bound the StreamApps served."""
    (daemon,) = [h for h in _streamapp_handlers(kopf.get_default_registry()._spawning)]
    assert inspect.iscoroutinefunction(daemon.fn)
