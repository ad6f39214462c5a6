"""Where the StreamApp loops' blocking work runs: a bounded fast lane and a slow lane, a bulkhead between fast and
slow apps.

Each StreamApp's loop is a coroutine (a few KB, no thread held while it waits); its blocking steps (the kubernetes
client, Prometheus, the job's control endpoint) run in worker threads, and slots bound how many run at once: `fast`
for the apps whose steps are quick, `slow` for the apps whose last step took longer than `slow_after_s` (endpoints
near their timeouts). A step that overruns `slow_after_s` gives its fast slot to the next app at once and finishes
on its own thread, and its app moves to the slow lane: a tenth of the apps hanging on their endpoints holds the fast
lane for `slow_after_s` each at most, never for their timeouts, so the others keep their schedule.
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
        return cls(fast=_positive("ELASTREAM_WORKERS", int, default.fast),
                   slow=_positive("ELASTREAM_SLOW_WORKERS", int, default.slow),
                   slow_after_s=_positive("ELASTREAM_SLOW_AFTER_SECONDS", float, default.slow_after_s))


def _positive(name: str, kind: type, default: float) -> Any:
    """$name as a number of `kind` (an int: at least 1; a float: above 0); ValueError naming the variable."""
    raw = os.environ.get(name, str(default))
    try:
        value = kind(raw)
    except ValueError:
        raise ValueError(f"${name} must be {'a whole number' if kind is int else 'a number'}, not {raw!r}") from None
    if not (value >= 1 if kind is int else value > 0):
        raise ValueError(f"${name} must be {'at least 1' if kind is int else 'above 0'}, not {raw!r}")
    return value


# threads for steps that overran their fast slot, per fast slot: an overrun step keeps its thread until its
# timeouts end it, and a slot can be given up every slow_after_s
OVERRUN_THREADS_PER_FAST_SLOT = 8


@dataclass
class Lanes:
    sizes: LaneSizes = field(default_factory=LaneSizes)
    slow_keys: set[str] = field(default_factory=set)

    def __post_init__(self):
        threads = self.sizes.fast * (1 + OVERRUN_THREADS_PER_FAST_SLOT) + self.sizes.slow
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="elastream-step")
        self.fast_slots = asyncio.Semaphore(self.sizes.fast)
        self.slow_slots = asyncio.Semaphore(self.sizes.slow)

    async def run(self, key: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """fn(*args, **kwargs) in a worker thread, in the lane `key` belongs to; moves `key` between lanes by how long
        it took."""
        # with this coroutine's context, as asyncio.to_thread does: kopf.event() finds kopf's settings in it
        call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
        started = time.monotonic()
        try:
            if key in self.slow_keys:
                async with self.slow_slots:
                    return await self._start(call)
            return await self._run_fast(key, call)
        finally:
            self._route(key, time.monotonic() - started)

    async def _run_fast(self, key: str, call: Callable[[], Any]) -> Any:
        await self.fast_slots.acquire()
        try:
            step = self._start(call)
            # asyncio.wait, not wait_for: it never cancels the step, and never swallows our own cancellation
            done, _ = await asyncio.wait({step}, timeout=self.sizes.slow_after_s)
            if not done:
                self.slow_keys.add(key)  # overran: the slot goes to the next app, the step ends on its own
        finally:
            self.fast_slots.release()
        return await step

    def _start(self, call: Callable[[], Any]) -> asyncio.Future:
        return asyncio.get_running_loop().run_in_executor(self.pool, call)

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
        self.pool.shutdown(wait=False, cancel_futures=True)


_installed: list[Lanes] = []


def install(sizes: LaneSizes) -> Lanes:
    """The process' lanes, made anew at each operator start (kopf may be started again in-process: the tests)."""
    for old in _installed:
        old.shutdown()
    _installed[:] = [Lanes(sizes)]
    return _installed[0]


def lanes() -> Lanes:
    return _installed[0] if _installed else install(LaneSizes.from_environment())
