"""Descriptors as a plug-in would declare them, for the catalogue's specs (not loaded by anything else)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from faults.kinds import FaultKind, NoParams
from faults.platform import HOST_HAS_BMC, Backend, Condition, Platform
from harness_kernel.topology.credentials import CredentialRef
from harness_kernel.topology.targets import TargetKind


class ToySection(BaseModel):
    """`management.platforms.toy`: where its controller is, how to log in, which outlet feeds which host."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    address: str
    credential: CredentialRef
    outlets: dict[str, int] = Field(default_factory=dict)


ANY_HOST = Condition("the host is listed", lambda target, topology: True)

PLATFORM = Platform("toy", (
    Backend("outlet-cycle", "faults.backends.process:ProcessFreeze", ANY_HOST),
    Backend("host-power-off", "faults.backends.process:ProcessFreeze", ANY_HOST),
), kinds=(FaultKind("outlet-cycle", TargetKind.HOST, NoParams, False, "the host's outlet is switched off, then on"),),
    realises=(("host-power-loss", "outlet-cycle"),), section=ToySection, summary="a toy")

CLAIMS_REDFISH = Platform("redfish", (Backend("host-power-off", "x:Y", HOST_HAS_BMC),))
REDEFINES_A_KIND = Platform("toy", (), kinds=(FaultKind("latency", TargetKind.LINK, NoParams, False, "again"),))
UNKNOWN_KIND = Platform("toy", (Backend("host-melt", "x:Y"),))
NOT_A_PLATFORM = {"name": "toy"}
