"""Waiting on state in a test, never on a sleep: a probe asked until it holds, bounded."""

from __future__ import annotations

import time
from collections.abc import Callable


def eventually(probe: Callable[[], bool], timeout_s: float = 10.0, interval_s: float = 0.05) -> bool:
    """True as soon as `probe()` holds; False if it still does not after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not probe():
        if time.monotonic() > deadline:
            return False
        time.sleep(interval_s)
    return True
