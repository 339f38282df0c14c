"""What a VPLEX / metro node answers on REST API v2, as far as the metro observer reads it.

Field names as Dell's generated SDK declares them (dell/python-vplex, vplexapi-7.0.0/vplexapi/models;
docs/reference/vplex-metro-rest-v2.md quotes each). The SDK types most states as free strings and
its enums describe what the spec declared, not what a live system returns: every state here is kept
as the string it came as, and fields the observer does not read are ignored, so a newer release's
additions never break a read. A reference to another object (a cluster, a volume) may be a name or
a URI ending in it (a detach rule's cluster is a URI, as Dell's Ansible writes it): `leaf` reads both.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict

T = TypeVar("T")


def leaf(reference: str) -> str:
    """`/vplex/v2/clusters/cluster-1` and `cluster-1` alike: the name a reference ends in."""
    return reference.rstrip("/").rsplit("/", 1)[-1]


def _empty_if_null(value: Any) -> Any:
    return [] if value is None else value


Listed = Annotated[list[T], BeforeValidator(_empty_if_null)]  # a list the server may send as null or leave out


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Cluster(_Reply):
    """models/cluster.py: `connected` (bool), `operational_status` and `health_state` (plain strings)."""

    name: str
    connected: bool | None = None
    operational_status: str | None = None
    health_state: str | None = None
    is_local: bool | None = None


class WanComHealth(_Reply):
    """models/wan_com_health.py: `status` (ComStatus: full, partial, none, not-applicable) and `details`."""

    status: str | None = None
    details: Listed[str] = []


class WitnessComponent(_Reply):
    """models/cluster_witness_components.py: `operational_state` is a free string."""

    name: str
    admin_state: str | None = None
    operational_state: str | None = None
    diagnostic: str | None = None


class ClusterWitness(_Reply):
    """models/cluster_witness.py: `admin_state` (AdminState) and its `components`."""

    admin_state: str | None = None
    components: Listed[WitnessComponent] = []


class CgStatus(_Reply):
    """models/consistency_group_operational_status.py: one entry per cluster."""

    cluster: str
    summary: str | None = None
    details: Listed[str] = []


class ConsistencyGroup(_Reply):
    """models/consistency_group.py (distributed consistency groups use the same model)."""

    name: str
    operational_status: Listed[CgStatus] = []
    active_clusters: Listed[str] = []
    detach_rule: Any = None  # declared 'object': {"type": "winner", "cluster": <uri>, "delay": s} or no_automatic_winner
    auto_resume_at_loser: bool | None = None
    virtual_volumes: Listed[str] = []


class DistributedDevice(_Reply):
    """models/distributed_device.py: the rebuild fields are ints there (the local Device declares them 'str')."""

    name: str
    virtual_volume: str | None = None
    health_indications: Listed[str] = []
    rebuild_status: str | None = None
    rebuild_progress: int | float | str | None = None
    rebuild_eta: int | float | str | None = None


class Version(_Reply):
    """models/version.py: one component's `name`, `version` and `info` (GET /versions)."""

    name: str
    version: str | None = None
