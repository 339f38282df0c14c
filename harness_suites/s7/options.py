"""S7's own options: the backups' rates and places, their bound, the restore's destination, the QoS comparison.

The restore's destination is checked twice: at once for what no engine accepts, and once the
topology says which engine restores (`check`), for that engine's rules.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from harness.options import Declaration
from harness.run_options import (
    Finite,
    check_restore_destination,
    checked,
    destination_of,
    qos_disk_of,
    rates_of,
    restore_destination_of,
)
from harness_kernel.topology.models import Topology


class Options(Declaration):
    backup_rates: Annotated[str, checked(rates_of)] = Field(
        default="none", description="S7: one backup per rate, comma-separated: 'none' (unthrottled) or a pg_basebackup "
                            "--max-rate such as 4M")
    backup_destination: Annotated[str, checked(destination_of)] | None = Field(
        default=None, description="S7: where the backup is written (default on the lab: its backup area)")
    backup_timeout_s: Finite = Field(default=1800.0, gt=0, le=86_400, description="S7: bound on one backup (and restore)")
    restore_destination: Annotated[str, checked(restore_destination_of)] | None = Field(
        default=None, description="S7: the directory the restore's copy is written into: PostgreSQL: on this machine "
                          "(default: the database's backup_area; the lab sets its own); SQL Server: on the server, "
                          "where every file of the copy (databases[].restore_as) is moved")
    qos_iops_limit: int | None = Field(
        default=None, ge=1, le=2_147_483_647,
        description="S7: also a backup under this vSAN IOPS limit (a storage policy with VSAN.iopsLimit on the "
                    "primary's disk), beside one without it; where a platform sets one (vSphere)")
    qos_disk: Annotated[str, checked(qos_disk_of)] = Field(
        default="Hard disk 1", description="S7: the label of the primary's virtual disk that holds the backup destination")

    @property
    def backup_rate_values(self) -> tuple[str, ...]:
        return rates_of(self.backup_rates)

    def check(self, topology: Topology, origin: str) -> None:
        """What only the topology settles: the restore's destination for the engine that restores."""
        check_restore_destination(self.restore_destination, topology, origin)
