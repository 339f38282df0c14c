"""The management plane a topology names: vCenter, and the endpoints (Redfish, WinRM, SSH).

The keys of `management:` in a topology file. A platform's own section is validated by its
platform's model, not here: a plug-in's under `management.platforms.<name>`, vSAN's at the key it
has always had, `management.vsan` (`faults.sections`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, JsonValue, ValidationInfo, model_validator

from harness_kernel.topology.credentials import CredentialRef, SecretRef
from harness_kernel.topology.values import (
    Address,
    CaFile,
    Display,
    HostKey,
    Name,
    Port,
    StrictModel,
    Username,
    from_document,
    is_loopback,
)


class TlsPolicy(StrictModel):
    verify: bool = Field(default=True, strict=True)
    ca_file: CaFile | None = None


class VCenter(StrictModel):
    address: Address
    port: Port = 443
    credential: CredentialRef
    tls: TlsPolicy = TlsPolicy()
    datacenter: Display | None = None
    cluster: Display
    allow_host_shutdown: bool = Field(
        default=False, strict=True,
        description="let host-power-off fall back to ShutdownHost_Task on a host without a BMC: graceful "
                    "(HA may not restart its VMs) and nothing can power the host on again, so the revert "
                    "waits for someone to do it; off unless you accept that")


class RedfishEndpoint(StrictModel):
    name: Name
    address: Address
    port: Port = 443
    system_id: Name | None = Field(default=None, description="discovered from /redfish/v1/Systems if absent")
    credential: CredentialRef
    tls: TlsPolicy = TlsPolicy()


class WinRmEndpoint(StrictModel):
    name: Name
    address: Address
    port: Port = 5986
    scheme: Literal["https", "http"] = Field(
        default="https", description="http only for a listener on this machine (a tunnel): the transport "
                                     "refuses plain http to any other address")
    transport: Literal["ntlm", "kerberos", "credssp", "basic"] = "ntlm"
    credential: CredentialRef
    tls: TlsPolicy = TlsPolicy()

    @model_validator(mode="after")
    def _no_readable_password(self) -> WinRmEndpoint:
        if self.scheme == "http" and self.transport == "basic" and not is_loopback(self.address):
            raise ValueError("scheme http with transport basic sends the password readable: use https, or "
                             "http only to a listener on this machine (127.0.0.1)")
        return self


class SshEndpoint(StrictModel):
    name: Name
    address: Address
    port: Port = 22
    username: Username
    key_file: SecretRef | None = Field(default=None, description="where the private key path lives")
    password: SecretRef | None = None
    host_key: HostKey | None = Field(default=None, description="'<type> <base64>' pinned host key")

    @model_validator(mode="after")
    def _a_way_to_log_in(self, info: ValidationInfo) -> SshEndpoint:
        """A file's endpoint names how to log in (the embedded lab's router is a namespace: no login)."""
        if self.key_file is None and self.password is None and from_document(info):
            raise ValueError("give key_file or password: without either the login cannot succeed")
        return self


class Management(StrictModel):
    vcenter: VCenter | None = None
    vsan: dict[str, JsonValue] = Field(
        default_factory=dict, description="vSAN's settings: validated by the vsan platform's own section model "
                                          "(harness_platforms/vsphere/vsan/section.py) when the topology is used")
    redfish: list[RedfishEndpoint] = []
    winrm: list[WinRmEndpoint] = []
    ssh: list[SshEndpoint] = []
    platforms: dict[Name, dict[str, JsonValue]] = Field(
        default_factory=dict, description="platform name -> its section, for platforms from plug-ins: each is "
                                          "validated by its platform's own model when the topology is used")

    def named(self) -> list[tuple[str, RedfishEndpoint | WinRmEndpoint | SshEndpoint]]:
        """(field path, endpoint) of every named endpoint: `management.ssh[0]`, ..."""
        found: list[tuple[str, RedfishEndpoint | WinRmEndpoint | SshEndpoint]] = []
        found += [(f"management.redfish[{i}]", e) for i, e in enumerate(self.redfish)]
        found += [(f"management.winrm[{i}]", e) for i, e in enumerate(self.winrm)]
        found += [(f"management.ssh[{i}]", e) for i, e in enumerate(self.ssh)]
        return found

    def addresses(self) -> list[tuple[str, str]]:
        """(field path, address) of every endpoint the harness reaches the cluster through."""
        found = [("management.vcenter.address", self.vcenter.address)] if self.vcenter else []
        return found + [(f"{path}.address", e.address) for path, e in self.named()]
