"""Measured steps: the warm-up and the measured seconds of each step, read by S1, S5 and S6."""

from __future__ import annotations

from pydantic import Field

from harness.options import Declaration
from harness.run_options import Finite


class Options(Declaration):
    step_s: Finite = Field(default=20.0, gt=0, le=86_400, description="S1: measured seconds per RTT step")
    warmup_s: Finite = Field(default=5.0, ge=0, le=86_400, description="S1: warm-up seconds per RTT step")
