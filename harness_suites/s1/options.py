"""S1's own options: the RTT steps of the sweep."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from harness.options import Declaration
from harness.run_options import checked, steps_of


class Options(Declaration):
    rtt_steps: Annotated[str, checked(steps_of)] = Field(default="0,2,4,8", description="S1: added inter-site RTT steps (ms)")

    @property
    def rtt_step_values(self) -> tuple[float, ...]:
        return steps_of(self.rtt_steps)
