"""What the PDU adds to the cluster view, read-only: its identity for the report, a preflight, a probe, an observer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Self

from faults.contract import HarnessError, Topology, section
from harness_pdu.client import RackPdu
from harness_pdu.section import NAME, PduSection


def _pdu(topology: Topology) -> RackPdu:
    return RackPdu(section(topology, NAME, PduSection))


@dataclass
class _Reads:
    """Built from the topology alone (nothing contacted until asked)."""

    pdu: RackPdu

    @classmethod
    def from_topology(cls, topology: Topology) -> Self:
        return cls(_pdu(topology))


class PduView(_Reads):
    """The cluster part: every outlet feeding a listed host is On before an experiment starts."""

    def preflight(self) -> None:
        for host, outlet in sorted(self.pdu.section.outlets.items()):
            state, moving = self.pdu.power_state(outlet)
            if state != "On" or moving:
                raise HarnessError(f"{self.pdu.where}: outlet {outlet} (host {host}) is {state}: not healthy")

    def describe(self) -> Mapping[str, str]:
        info = self.pdu.info()
        return {"rack_pdu": f"{info.get('Manufacturer', '?')} {info.get('Model', '?')}, firmware "
                            f"{info.get('FirmwareVersion', '?')} ({len(self.pdu.section.outlets)} outlets listed)"}


def probe(topology: Topology) -> str:
    """Read-only: the PDU answers with this login and lists every outlet the topology names."""
    pdu = _pdu(topology)
    info = pdu.info()
    states = {outlet: pdu.power_state(outlet)[0] for outlet in sorted(set(pdu.section.outlets.values()))}
    return f"{info.get('Model', '?')}: outlets " + ", ".join(f"{o} {s}" for o, s in states.items())


class OutletPower(_Reads):
    """The observer: each listed outlet's power draw (`PowerWatts.Reading`), every second of an experiment."""

    def sample(self) -> Mapping[str, float]:
        figures: dict[str, float] = {}
        for host, outlet in sorted(self.pdu.section.outlets.items()):
            reading = (self.pdu.outlet(outlet).get("PowerWatts") or {}).get("Reading")
            if isinstance(reading, int | float):
                figures[f"{host} outlet W"] = float(reading)
        return figures
