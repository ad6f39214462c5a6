"""Ending a long command cleanly: Ctrl-C and SIGTERM both raise KeyboardInterrupt while it runs."""
from __future__ import annotations

import signal
from contextlib import contextmanager
from typing import Iterator


def _interrupt(signum, frame):
    raise KeyboardInterrupt


@contextmanager
def interruptible() -> Iterator[None]:
    """Inside the block, SIGINT and SIGTERM raise KeyboardInterrupt (SIGINT too when started in the background,
    where the shell may have ignored it); the handlers before are put back after, so that a caller in the same
    process (a test runner) keeps its own."""
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)  # None: set from C
