"""Descriptors as a plug-in would declare them, for the catalogue's specs (not loaded by anything else)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from pydantic import BaseModel, ConfigDict, Field

from faults import sections
from faults.base import FaultPlan, FaultSpec, FaultState
from faults.kinds import FaultKind, NoParams, Params
from faults.platform import ON_THE_LAB, Backend, Condition, Platform
from harness_kernel.errors import ControlPlaneError, CredentialRejectedError, HarnessError
from harness_kernel.topology.credentials import CredentialRef, resolve_secret
from harness_kernel.topology.models import Topology
from harness_kernel.topology.targets import Target, TargetKind


class ToySection(BaseModel):
    """`management.platforms.toy`: where its controller is, how to log in, which outlet feeds which host."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    address: str
    credential: CredentialRef
    outlets: dict[str, int] = Field(default_factory=dict)
    healthy: bool = True


ANY_HOST = Condition("the host is listed", lambda target, topology: True)

PLATFORM = Platform("toy", (
    Backend("outlet-cycle", "faults.backends.process:ProcessFreeze", ANY_HOST),
    Backend("host-power-off", "faults.backends.process:ProcessFreeze", ANY_HOST),
), kinds=(FaultKind("outlet-cycle", TargetKind.HOST, NoParams, False, "the host's outlet is switched off, then on"),),
    realises=(("host-power-loss", "outlet-cycle"),), section=ToySection, summary="a toy")

CLAIMS_THE_LAB = Platform("lab", (Backend("host-crash", "x:Y", ON_THE_LAB),))
REDEFINES_A_KIND = Platform("toy", (), kinds=(FaultKind("latency", TargetKind.LINK, NoParams, False, "again"),))
UNKNOWN_KIND = Platform("toy", (Backend("host-melt", "x:Y"),))
NOT_A_PLATFORM = {"name": "toy"}


class ToyPart:
    """A cluster part: healthy unless the section says otherwise."""

    def __init__(self, healthy: bool) -> None:
        self.healthy = healthy

    @classmethod
    def from_topology(cls, topology: Topology) -> ToyPart:
        return cls(bool((topology.management.platforms.get("toy") or {}).get("healthy", True)))

    def preflight(self) -> None:
        if not self.healthy:
            raise HarnessError("toy: an outlet is off")

    def describe(self) -> Mapping[str, str]:
        return {"toy": "ToyPDU 1.0"}


class ToyObserver:
    """Answers 1.0, 2.0, ... then fails once, as a sampler on a flaky network would."""

    def __init__(self) -> None:
        self.calls = 0

    @classmethod
    def from_topology(cls, topology: Topology) -> ToyObserver:
        return cls()

    def sample(self) -> Mapping[str, float]:
        self.calls += 1
        if self.calls == 3:
            raise ConnectionError("toy: no answer")
        return {"draw W": float(self.calls)}


def toy_probe(topology: Topology) -> str:
    return "ToyPDU answers"


WITH_PARTS = replace(PLATFORM, cluster_part="tests.unit.faults.toy_platform:ToyPart",
                     observers=("tests.unit.faults.toy_platform:ToyObserver",),
                     probes=("tests.unit.faults.toy_platform:toy_probe",))


class ToyOutlet:
    """outlet-cycle on a host, whose preflight answers from the section as a PDU would (nothing is contacted)."""

    def __init__(self, spec: FaultSpec, section: ToySection) -> None:
        self.spec = spec
        self.section = section

    @classmethod
    def from_spec(cls, spec: FaultSpec, params: Params, target: Target, topology: Topology) -> ToyOutlet:
        return cls(spec, sections.section(topology, "toy", ToySection))

    def plan(self) -> FaultPlan:
        return FaultPlan(self.spec, f"toy {self.section.address}", ("outlet off",), ("outlet on",),
                         ("management.platforms.toy.credential.password",))

    def preflight(self) -> None:
        password = resolve_secret(self.section.credential.password, "management.platforms.toy.credential.password")
        if password.reveal().startswith("refused-"):
            raise CredentialRejectedError(f"toy {self.section.address}: the login was refused (HTTP 401)")
        if not self.section.healthy:
            raise ControlPlaneError(f"toy {self.section.address}: the outlet is Off, nothing to switch off")

    def inject(self) -> None:
        raise ControlPlaneError("the toy outlet is never switched: it exists for doctor's specs")

    def check(self) -> FaultState:
        return FaultState.CLEARED

    def revert(self) -> None:
        return None


def failing_probe(topology: Topology) -> str:
    raise ControlPlaneError("toy 192.0.2.90: unreachable (connection refused)")


DOCTOR = Platform("toy", (Backend("outlet-cycle", "tests.unit.faults.toy_platform:ToyOutlet", ANY_HOST),),
                  kinds=PLATFORM.kinds, section=ToySection, probes=("tests.unit.faults.toy_platform:toy_probe",))
