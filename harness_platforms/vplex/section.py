"""`management.platforms.vplex`: where a VPLEX / metro node answers REST API v2, how to log in, what to observe.

The harness only reads the product (it never resumes, detaches or patches anything), so the
section says where to read and what: the management endpoint, the account, which VPLEX cluster
stands in which topology site, and the distributed consistency groups to follow.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from faults.contract import CredentialRef, ca_file, host_address

NAME = "vplex"
FIELD = "management.platforms.vplex"
OBJECT_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$"  # a cluster's or a consistency group's name, as a URI segment


def _an_origin(endpoint: str) -> str:
    return _origin(endpoint)


Origin = Annotated[str, AfterValidator(_an_origin)]
"""Each fallback checked on its own, so that a refusal names its index (`fallback_endpoints[0]`)."""


class VplexSection(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    endpoint: str = Field(description="the management server, https://HOST[:PORT] (REST API v2 under /vplex/v2)")
    fallback_endpoints: list[Origin] = Field(default_factory=list, max_length=1,
                                          description="the other cluster's management server, read while `endpoint` "
                                                      "does not answer (after the loss of its site)")
    credential: CredentialRef
    auth: Literal["basic", "token"] = Field(default="basic", description="basic: HTTP Basic auth on every call (as "
                                            "Dell's Ansible collection); token: a bearer token from POST /token")
    verify_tls: bool = True
    ca_file: str | None = Field(default=None, description="the CA bundle that signed the management server's "
                                                          "certificate (default: the system's)")
    clusters: dict[str, str] = Field(min_length=1, max_length=2,
                                     description="VPLEX cluster name -> the topology site it stands in "
                                                 "(cluster-1: site-a)")
    consistency_groups: list[str] = Field(min_length=1, max_length=64,
                                          description="the distributed consistency groups to observe, by name")
    timeout_s: float = Field(default=10.0, gt=0, le=120, description="bound on each request")

    @field_validator("endpoint")
    @classmethod
    def _an_origin(cls, endpoint: str) -> str:
        return _origin(endpoint)

    @field_validator("ca_file")
    @classmethod
    def _an_ordinary_file(cls, path: str | None) -> str | None:
        return None if path is None else ca_file(path)

    @field_validator("clusters")
    @classmethod
    def _cluster_names(cls, clusters: dict[str, str]) -> dict[str, str]:
        bad = [name for name in clusters if not _fits(name)]
        if bad:
            raise ValueError(f"not a VPLEX cluster name: {', '.join(repr(b) for b in bad)}")
        if len(set(clusters.values())) != len(clusters):
            raise ValueError("two VPLEX clusters stand in one site; each stands in a site of its own")
        return clusters

    @field_validator("consistency_groups")
    @classmethod
    def _group_names(cls, groups: list[str]) -> list[str]:
        bad = [name for name in groups if not _fits(name)]
        if bad:
            raise ValueError(f"not a consistency group name: {', '.join(repr(b) for b in bad)}")
        if len(set(groups)) != len(groups):
            raise ValueError("a consistency group is listed twice")
        return groups

    @property
    def origins(self) -> list[tuple[str, str]]:
        """Each management server with its field path, in the order they are read."""
        return [(f"{FIELD}.endpoint", self.endpoint),
                *((f"{FIELD}.fallback_endpoints[{i}]", e) for i, e in enumerate(self.fallback_endpoints))]


def _origin(endpoint: str) -> str:
    parts = urlsplit(endpoint)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ValueError("give the management server as https://HOST[:PORT]")
    if parts.username is not None or parts.password is not None:
        raise ValueError("no credential in the URL: it belongs in credential (a reference)")
    if parts.path.strip("/") or parts.query or parts.fragment:
        raise ValueError("give the server alone (https://HOST[:PORT]); the harness adds /vplex/v2")
    if parts.scheme == "http" and not _loopback(parts.hostname):
        raise ValueError("http is for a loopback address only: Basic auth would cross the network in clear")
    host_address(parts.hostname)  # one host's, never link-local: Basic auth goes to it on every call
    _ = parts.port  # a port out of range raises ValueError here, named by the field
    return endpoint.rstrip("/")


def _fits(name: str) -> bool:
    return re.fullmatch(OBJECT_NAME, name) is not None


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"
