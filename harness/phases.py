"""How long each phase of an experiment lasts: the one home of the phase defaults.

A module of its own, light to import: the run's options take their defaults from here, and the
demo builds its shortened phases from it, without loading the experiment (and numpy) with them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PhaseDurations:
    """How long each phase lasts; nightly runs lengthen them, CI smoke runs shorten them."""

    baseline_s: float = 15.0
    observe_s: float = 20.0
    recover_timeout_s: float = 240.0
    settle_s: float = 10.0
    steady_window_s: int = 10  # how long throughput must hold inside the band to count as steady
