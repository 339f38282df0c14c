"""`management.platforms.pdu`: where the rack PDU is, how to log in, and which outlet feeds which host."""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from faults.contract import CredentialRef

NAME = "pdu"


class PduSection(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    address: str = Field(min_length=1, max_length=253, pattern=r"^[A-Za-z0-9][A-Za-z0-9.:-]*$")
    port: int = Field(default=443, ge=1, le=65535)
    scheme: Literal["https", "http"] = Field(default="https", description="http only to a loopback address")
    verify_tls: bool = True
    ca_file: str | None = None
    credential: CredentialRef
    rack_pdu: str = Field(default="1", pattern=r"^[A-Za-z0-9_.-]{1,64}$",
                          description="the member of /redfish/v1/PowerEquipment/RackPDUs")
    outlets: dict[str, str] = Field(min_length=1, description="host name -> the id of the outlet that feeds it")
    timeout_s: float = Field(default=10.0, gt=0, le=120, description="bound on each request")
    switch_timeout_s: float = Field(default=60.0, gt=0, le=600, description="bound on an outlet reaching a state")

    @model_validator(mode="after")
    def _plain_http_stays_local(self) -> PduSection:
        if self.scheme == "http" and not _loopback(self.address):
            raise ValueError("scheme http is for a loopback address only: a password would cross the network in clear")
        return self

    def base(self) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"{self.scheme}://{host}:{self.port}"


def _loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return address == "localhost"
