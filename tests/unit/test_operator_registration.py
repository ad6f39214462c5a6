"""How the operator registers with kopf: no finalizer on StreamApps (deleting one never needs a running operator)
and loops that hold no thread while they wait."""
import inspect
import logging
import re

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


@pytest.mark.parametrize("name, value, says", [
    ("ELASTREAM_WORKERS", "0", "must be at least 1, not '0'"),
    ("ELASTREAM_WORKERS", "sixteen", "must be a whole number, not 'sixteen'"),
    ("ELASTREAM_SLOW_WORKERS", "2.5", "must be a whole number, not '2.5'"),
    ("ELASTREAM_SLOW_AFTER_SECONDS", "0", "must be above 0, not '0'"),
    ("ELASTREAM_SLOW_AFTER_SECONDS", "2s", "must be a number, not '2s'"),
])
def test_bad_lane_settings_are_refused_naming_the_variable(monkeypatch, name, value, says):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=re.escape(f"${name} {says}")):
        LaneSizes.from_environment()


def test_the_streamapp_loop_is_a_coroutine():
    """A sync daemon holds a thread for its StreamApp's lifetime: the pool would bound the StreamApps served."""
    (daemon,) = [h for h in _streamapp_handlers(kopf.get_default_registry()._spawning)]
    assert inspect.iscoroutinefunction(daemon.fn)
