"""S5's own options: the RTT steps at which the database VM migrates."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from harness.options import Declaration
from harness.run_options import checked, steps_of


class Options(Declaration):
    migration_rtt_steps: Annotated[str, checked(steps_of)] = Field(
        default="0,1,2,4", description="S5: added inter-site RTT steps (ms) at which the database VM migrates")

    @property
    def migration_rtt_step_values(self) -> tuple[float, ...]:
        return steps_of(self.migration_rtt_steps)
