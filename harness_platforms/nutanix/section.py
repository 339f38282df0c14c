"""`management.platforms.nutanix`: where Prism answers, how to log in, and how the topology's names are Prism's.

Prism Central takes every change (v4). Each site's Prism Element is listed too: a read Prism
Central does not answer (it may have lived in the site that was lost) goes to them in turn, and
the cluster's data resiliency (v2 `domain_fault_tolerance_status`, which only Prism Element
serves) is read from them. The API version of each v4 namespace is a setting: Nutanix moved the
paths from v4.0 to v4.3/v4.4 and a cluster serves what its release serves (A-prism-api-version).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from faults.contract import CredentialRef, ca_file, host_address

NAME = "nutanix"
FIELD = "management.platforms.nutanix"
PRISM_NAME = r"^[A-Za-z0-9][A-Za-z0-9 _.()-]{0,79}$"  # a VM's, host's or cluster's name as Prism shows it
VERSION = r"^v4\.[0-9]{1,2}$"


def _origin(endpoint: str) -> str:
    return origin(endpoint)


Origin = Annotated[str, AfterValidator(_origin)]


class ApiVersions(BaseModel):
    """The version segment of each v4 namespace's paths; the defaults are the SDK's (ntnx-api-golang-clients
    5532819: vmm v4.3.1, clustermgmt v4.3.1, prism v4.4)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    vmm: str = Field(default="v4.3", pattern=VERSION)
    clustermgmt: str = Field(default="v4.3", pattern=VERSION)
    prism: str = Field(default="v4.4", pattern=VERSION)


class NutanixSection(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    endpoint: str = Field(description="Prism Central, https://HOST[:PORT] (9440 by Nutanix's default)")
    fallback_endpoints: list[Origin] = Field(
        default_factory=list, max_length=8,
        description="each site's Prism Element, https://HOST[:PORT]: read while Prism Central does not answer, "
                    "and where the data resiliency (v2) is read")
    credential: CredentialRef
    verify_tls: bool = True
    ca_file: str | None = Field(default=None, description="the CA bundle that signed Prism's certificates")
    cluster: str = Field(pattern=PRISM_NAME, description="the Prism Element cluster's name, as Prism shows it")
    vms: dict[str, str] = Field(default_factory=dict,
                                description="database node -> its VM's name in Prism (default: the node's vm, "
                                            "else its name)")
    hosts: dict[str, str] = Field(default_factory=dict,
                                  description="topology host -> its hostName in Prism (default: the same name)")
    api_versions: ApiVersions = ApiVersions()
    shutdown_non_migratable_vms: bool = Field(
        default=False, description="host-maintenance may power off the VMs Prism cannot migrate off the host "
                                   "(shouldShutdownNonMigratableUvms); otherwise such a host is refused")
    timeout_s: float = Field(default=10.0, gt=0, le=120, description="bound on each request")
    task_timeout_s: float = Field(default=900.0, gt=0, le=86_400, description="bound on a task reaching an end")
    poll_s: float = Field(default=2.0, ge=0.01, le=60, description="between two reads of a task")

    @field_validator("endpoint")
    @classmethod
    def _an_origin(cls, endpoint: str) -> str:
        return origin(endpoint)

    @field_validator("ca_file")
    @classmethod
    def _an_ordinary_file(cls, path: str | None) -> str | None:
        return None if path is None else ca_file(path)

    @field_validator("vms", "hosts")
    @classmethod
    def _prism_names(cls, names: dict[str, str]) -> dict[str, str]:
        bad = [name for name in names.values() if not re.fullmatch(PRISM_NAME, name)]
        if bad:
            raise ValueError(f"not a name as Prism shows one: {', '.join(repr(b) for b in bad)}")
        return names

    @property
    def origins(self) -> list[tuple[str, str]]:
        """Each Prism with its field path, in the order a read asks them."""
        return [(f"{FIELD}.endpoint", self.endpoint),
                *((f"{FIELD}.fallback_endpoints[{i}]", e) for i, e in enumerate(self.fallback_endpoints))]


def origin(endpoint: str) -> str:
    """`https://HOST[:PORT]` and nothing more; plain http only to this machine (the stand-in)."""
    url = urlsplit(endpoint)
    refusals = (
        (url.scheme not in ("https", "http") or not url.hostname, "Prism is https://HOST[:PORT]"),
        (bool(url.username or url.password), "a URL carries no credential: name it in credential"),
        (bool(url.path.strip("/") or url.query or url.fragment), "the server alone: the harness adds each API path"),
        (url.scheme == "http" and not _this_machine(url.hostname or ""),
         "http only to a loopback address: Basic auth would cross the network in clear"),
    )
    for refused, why in refusals:
        if refused:
            raise ValueError(why)
    host_address(url.hostname or "")  # one host's, never link-local: Basic auth goes to it on every call
    _ = url.port  # out of range: ValueError, named by the field
    return endpoint.rstrip("/")


def _this_machine(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
