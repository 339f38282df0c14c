"""The freeze a scripted run injects (`fault_script.py`): importable, so the guardian and `recover` rebuild it.

It announces its lifecycle on stdout (flushed) so a test can time its signals: `injecting`,
`revert-start`, `revert-done`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from faults.backends.process import ProcessFreeze
from faults.base import FaultState


def say(line: str) -> None:
    print(line, flush=True)


@dataclass
class ScriptedFreeze(ProcessFreeze):
    """As the script builds it, it announces; as a reverter rebuilds it (`from_spec`), it keeps quiet."""

    announce: bool = False
    inject_s: float = 0.0
    revert_s: float = 0.0
    clear_after_s: float = 0.0
    _reverted_at: float | None = None

    def inject(self) -> None:
        self._say("injecting")
        super().inject()
        time.sleep(self.inject_s)

    def revert(self) -> None:
        self._say("revert-start")
        time.sleep(self.revert_s)
        super().revert()
        if self._reverted_at is None:
            self._reverted_at = time.monotonic()
        self._say("revert-done")

    def _say(self, line: str) -> None:
        if self.announce:
            say(line)

    def check(self) -> FaultState:
        state = super().check()
        if state is FaultState.CLEARED and self._reverted_at is not None \
                and time.monotonic() - self._reverted_at < self.clear_after_s:
            return FaultState.UNKNOWN  # a revert that takes a while to show (a node rejoining)
        return state
