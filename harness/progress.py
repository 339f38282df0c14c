"""Progress of long waits (warm-up, failover, resync) for people watching a terminal.

One line, rewritten in place: what is awaited, elapsed, and the ETA when known. Quiet mode
(CI) prints one line when a wait starts and one when it ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

Write = Callable[[str], None]


@dataclass
class Progress:
    write: Write
    quiet: bool = False
    width: int = 28

    def wait(self, what: str, seconds: float, *, interval_s: float = 0.5,
             tick: Callable[[], None] | None = None, abort: Callable[[], bool] | None = None) -> None:
        """Wait `seconds` showing a bar; `tick` runs every interval (sampling), `abort` ends early."""
        start = time.monotonic()
        self._start(what)
        while (elapsed := time.monotonic() - start) < seconds:
            if tick:
                tick()
            if abort and abort():
                break
            self._bar(what, elapsed, seconds)
            time.sleep(min(interval_s, max(0.0, seconds - elapsed)))
        self._end(what, time.monotonic() - start)

    def until(self, what: str, done: Callable[[], bool], timeout_s: float, *, interval_s: float = 0.5,
              tick: Callable[[], None] | None = None, eta: Callable[[], float | None] | None = None) -> bool:
        """Wait until `done()` or the timeout; True if done. `eta()` gives seconds left, if known."""
        start = time.monotonic()
        self._start(what)
        finished = False
        while (elapsed := time.monotonic() - start) < timeout_s:
            if tick:
                tick()
            if done():
                finished = True
                break
            left = eta() if eta else None
            self._bar(what, elapsed, elapsed + left if left is not None else None)
            time.sleep(interval_s)
        self._end(what, time.monotonic() - start, "done" if finished else "timed out")
        return finished

    def _start(self, what: str) -> None:
        if self.quiet:
            self.write(f"[wait] {what}\n")

    def _bar(self, what: str, elapsed: float, total: float | None) -> None:
        if self.quiet:
            return
        if total:
            filled = int(self.width * min(1.0, elapsed / total))
            bar = "#" * filled + "." * (self.width - filled)
            text = f"\r[{bar}] {what}: {elapsed:5.1f}s / ETA {max(0.0, total - elapsed):5.1f}s"
        else:
            text = f"\r[{'?' * self.width}] {what}: {elapsed:5.1f}s"
        self.write(text + " " * 4)

    def _end(self, what: str, elapsed: float, how: str = "done") -> None:
        prefix = "" if self.quiet else "\r"
        self.write(f"{prefix}[{how}] {what} after {elapsed:.1f}s" + " " * 30 + "\n")
