"""Signals while a fault exists: Ctrl-C, SIGTERM and SIGHUP unwind into the revert, and nothing escapes it.

From the journal write until the revert is confirmed, the runner installs `FaultSignals`:

- before the revert (inject, the test body) the first signal raises, as Ctrl-C does, so the
  `finally` that reverts runs; SIGTERM and SIGHUP (the operator's SSH session dropping) too;
- from then on signals are held: the first tells the operator "reverting <fault>, up to N s;
  the journal keeps it", the second that one more aborts, and the third aborts the revert
  with "journal kept, run python -m harness recover" (the entry stays; the guardian and
  `recover` finish it). A held signal is raised once the revert is done, so the run stops.

A signal the process ignores (`nohup`: SIGHUP; a background job: SIGINT) stays ignored.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

log = logging.getLogger(__name__)

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
RECOVER_HINT = "journal kept, run python -m harness recover"


class Terminated(KeyboardInterrupt):
    """Raised in the main thread on SIGTERM or SIGHUP so every `finally` (every revert) runs."""


class RevertAborted(KeyboardInterrupt):
    """A third signal ended a revert before it was confirmed: the journal entry stays."""


def interruption(signum: int) -> KeyboardInterrupt:
    if signum == signal.SIGINT:
        return KeyboardInterrupt()
    return Terminated(f"signal {signum} ({signal.Signals(signum).name})")


def tell_operator(text: str) -> None:
    """One line for the person at the terminal, even while pytest captures output; never raises.

    Their terminal if stderr is not one (pytest captures it), else stderr; also logged.
    """
    log.info("%s", text)
    line = (text.rstrip("\n") + "\n").encode(errors="replace")
    with contextlib.suppress(OSError, ValueError):
        if os.isatty(2):
            os.write(2, line)
            return
    try:
        fd = os.open("/dev/tty", os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        fd = -1
    if fd >= 0:
        try:
            os.write(fd, line)
            return
        except OSError:
            pass
        finally:
            os.close(fd)
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.write(line.decode())
        sys.stderr.flush()


Say = Callable[[str], None]
_Handler = Callable[[int, FrameType | None], Any] | int | None


class FaultSignals:
    """The signal handlers of one fault's lifetime (main thread only; elsewhere they do nothing)."""

    def __init__(self, what: str, revert_timeout_s: float, say: Say = tell_operator) -> None:
        self.what = what
        self.revert_timeout_s = revert_timeout_s
        self.say = say
        self.deferring = False
        self.received: list[int] = []
        self._raised = False
        self._previous: dict[int, _Handler] = {}

    def install(self) -> FaultSignals:
        if threading.current_thread() is not threading.main_thread():
            return self
        for signum in HANDLED:
            previous = signal.getsignal(signum)
            if previous == signal.SIG_IGN:
                continue
            self._previous[signum] = previous
            signal.signal(signum, self._handle)
        return self

    def defer(self) -> None:
        """From now on (the revert) signals are held, announced, and the third aborts."""
        self.deferring = True

    def restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        self._previous.clear()

    def held_after_all(self) -> None:
        """The interruption raised just before `defer()` was caught there: raise it later, with the others."""
        self._raised = False

    def pending(self) -> KeyboardInterrupt | None:
        """The interruption held during the revert, to raise once it is done (None if already raised)."""
        if self.received and not self._raised:
            return interruption(self.received[0])
        return None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.received.append(signum)
        count = len(self.received)
        if count == 1:
            self.say(f"reverting {self.what}, up to {self.revert_timeout_s:.0f} s; the journal keeps it")
        elif count == 2:
            self.say(f"still reverting {self.what}; one more signal aborts the revert (the journal keeps it)")
        if not self.deferring:
            self.deferring = True
            self._raised = True
            raise interruption(signum)
        if count >= 3:
            self._raised = True
            message = f"revert of {self.what} aborted by signal {signal.Signals(signum).name}; {RECOVER_HINT}"
            self.say(message)
            raise RevertAborted(message)


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """While active, SIGTERM and SIGHUP unwind the main thread like Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_terminated(signum: int, frame: FrameType | None) -> None:
        raise interruption(signum)

    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    for signum, handler in previous.items():
        if handler != signal.SIG_IGN:
            signal.signal(signum, raise_terminated)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
