"""A wait reads as a live bar on a terminal and as two plain lines anywhere else (a log never gets carriage returns)."""

from __future__ import annotations

import pytest

from harness.progress import Progress


def shown(**options: bool) -> str:
    written: list[str] = []
    progress = Progress(written.append, **options)
    progress.wait("warm-up", 0.3, interval_s=0.05)
    assert progress.until("failover", lambda: len(written) > 40, 0.2, interval_s=0.05, eta=lambda: 1.0) is False
    return "".join(written)


@pytest.mark.parametrize("options", [{"terminal": False}, {"terminal": True, "quiet": True}], ids=["log", "quiet"])
def test_in_a_log_or_quiet_a_wait_is_one_line_when_it_starts_and_one_when_it_ends(options: dict[str, bool]) -> None:
    text = shown(**options)
    assert "\r" not in text and "\x1b" not in text
    lines = text.splitlines()
    assert lines[0] == "[wait] warm-up" and lines[1].startswith("[done] warm-up after 0.")
    assert lines[2] == "[wait] failover" and lines[3].startswith("[timed out] failover after 0.")
    assert len(lines) == 4


def test_on_a_terminal_a_live_bar_shows_the_wait_its_elapsed_time_and_eta_then_one_line_stays() -> None:
    text = shown(terminal=True)
    assert "warm-up" in text and "0:00:00" in text, "the bar names the wait and its elapsed time"
    assert "ETA 1s" in text, "an ETA when the waiter knows one"
    assert "\x1b[" in text, "redrawn in place"
    assert text.endswith("\n") and "[done] warm-up after 0." in text and "[timed out] failover after 0." in text
