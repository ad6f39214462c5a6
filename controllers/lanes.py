"""Where the StreamApp loops' blocking work runs: two bounded thread pools, a bulkhead between fast and slow apps.

Each StreamApp's loop is a coroutine (a few KB, no thread held while it waits); its blocking steps (the kubernetes
client, Prometheus, the job's control endpoint) run in one of two pools, so the pools' sizes bound the concurrency
toward all of them. An app whose last step took longer than `slow_after_s` (an endpoint near its timeouts) runs in
the slow lane until a step is quick again: a tenth of the apps hanging on their endpoints then fills the slow lane
and never the fast one, so the others keep their schedule (the bulkhead pattern).
"""
from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from controllers.metrics import SLOW_LANE_APPS


@dataclass
class LaneSizes:
    fast: int = 16
    slow: int = 32
    slow_after_s: float = 2.0

    @classmethod
    def from_environment(cls) -> "LaneSizes":
        """$ELASTREAM_WORKERS, $ELASTREAM_SLOW_WORKERS, $ELASTREAM_SLOW_AFTER_SECONDS (the chart's settings)."""
        default = cls()
        return cls(fast=_positive_int("ELASTREAM_WORKERS", default.fast),
                   slow=_positive_int("ELASTREAM_SLOW_WORKERS", default.slow),
                   slow_after_s=float(os.environ.get("ELASTREAM_SLOW_AFTER_SECONDS", default.slow_after_s)))


def _positive_int(name: str, default: int) -> int:
    value = int(os.environ.get(name, default))
    if value < 1:
        raise ValueError(f"${name} must be at least 1, not {value}")
    return value


@dataclass
class Lanes:
    sizes: LaneSizes = field(default_factory=LaneSizes)
    slow_keys: set[str] = field(default_factory=set)

    def __post_init__(self):
        self.fast = ThreadPoolExecutor(self.sizes.fast, thread_name_prefix="elastream-fast")
        self.slow = ThreadPoolExecutor(self.sizes.slow, thread_name_prefix="elastream-slow")

    async def run(self, key: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """fn(*args, **kwargs) in the lane `key` belongs to; moves `key` between lanes by how long it took."""
        slow = key in self.slow_keys
        started = time.monotonic()
        try:
            # with this coroutine's context, as asyncio.to_thread does: kopf.event() finds kopf's settings in it
            call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
            return await asyncio.get_running_loop().run_in_executor(self.slow if slow else self.fast, call)
        finally:
            self._route(key, time.monotonic() - started)

    def _route(self, key: str, took_s: float) -> None:
        if took_s > self.sizes.slow_after_s:
            self.slow_keys.add(key)
        else:
            self.slow_keys.discard(key)
        SLOW_LANE_APPS.set(len(self.slow_keys))

    def forget(self, key: str) -> None:
        self.slow_keys.discard(key)
        SLOW_LANE_APPS.set(len(self.slow_keys))

    def shutdown(self) -> None:
        self.fast.shutdown(wait=False, cancel_futures=True)
        self.slow.shutdown(wait=False, cancel_futures=True)


_installed: list[Lanes] = []


def install(sizes: LaneSizes) -> Lanes:
    """The process' lanes, made anew at each operator start (kopf may be started again in-process: the tests)."""
    for old in _installed:
        old.shutdown()
    _installed[:] = [Lanes(sizes)]
    return _installed[0]


def lanes() -> Lanes:
    return _installed[0] if _installed else install(LaneSizes.from_environment())
