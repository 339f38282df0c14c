"""Progress of long waits (warm-up, failover, resync) for people watching a terminal, and for logs.

On a terminal a live bar (rich's) shows what is awaited, elapsed, and the ETA when known, and
leaves one line when the wait ends. Anywhere else (a log file, CI, `--quiet-progress`) a wait
is two lines, its start and its end: no carriage returns, no bar redrawn hundreds of times.
The bar is redrawn from the waiting thread only (no refresh thread), so every write goes
through the `write` the caller gives (pytest's capture is bypassed per write).
"""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from rich.console import Console
from rich.progress import BarColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as Bar

Write = Callable[[str], None]
Show = Callable[[float, float | None], None]  # (elapsed, expected total or None)


class _Stream(io.StringIO):
    """A file for rich's console that hands every write to `write` (and keeps nothing)."""

    def __init__(self, write: Write) -> None:
        super().__init__()
        self._write = write

    def write(self, text: str) -> int:
        self._write(text)
        return len(text)

    def isatty(self) -> bool:
        return True


@dataclass
class Progress:
    write: Write
    quiet: bool = False
    terminal: bool = False  # a person watches: a live bar; otherwise a line when a wait starts and one when it ends

    def wait(self, what: str, seconds: float, *, interval_s: float = 0.5,
             tick: Callable[[], None] | None = None, abort: Callable[[], bool] | None = None) -> None:
        """Wait `seconds` showing a bar; `tick` runs every interval (sampling), `abort` ends early."""
        start = time.monotonic()
        with self._shown(what) as show:
            while (elapsed := time.monotonic() - start) < seconds:
                if tick:
                    tick()
                if abort and abort():
                    break
                show(elapsed, seconds)
                time.sleep(min(interval_s, max(0.0, seconds - elapsed)))
        self._end(what, time.monotonic() - start)

    def until(self, what: str, done: Callable[[], bool], timeout_s: float, *, interval_s: float = 0.5,
              tick: Callable[[], None] | None = None, eta: Callable[[], float | None] | None = None) -> bool:
        """Wait until `done()` or the timeout; True if done. `eta()` gives seconds left, if known."""
        start = time.monotonic()
        finished = False
        with self._shown(what) as show:
            while (elapsed := time.monotonic() - start) < timeout_s:
                if tick:
                    tick()
                if done():
                    finished = True
                    break
                left = eta() if eta else None
                show(elapsed, elapsed + left if left is not None else None)
                time.sleep(interval_s)
        self._end(what, time.monotonic() - start, "done" if finished else "timed out")
        return finished

    @contextlib.contextmanager
    def _shown(self, what: str) -> Iterator[Show]:
        if self.quiet or not self.terminal:
            self.write(f"[wait] {what}\n")
            yield lambda elapsed, total: None
            return
        console = Console(file=_Stream(self.write), force_terminal=True, force_interactive=True, highlight=False)
        bar = Bar(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), TextColumn("{task.fields[eta]}"),
                  console=console, auto_refresh=False, transient=True, redirect_stdout=False, redirect_stderr=False)
        task = bar.add_task(what, total=None, eta="")

        def show(elapsed: float, total: float | None) -> None:
            eta = f"ETA {max(0.0, total - elapsed):.0f}s" if total else ""
            bar.update(task, completed=elapsed, total=total, eta=eta)
            bar.refresh()

        bar.start()
        try:
            yield show
        finally:
            bar.stop()

    def _end(self, what: str, elapsed: float, how: str = "done") -> None:
        self.write(f"[{how}] {what} after {elapsed:.1f}s\n")
