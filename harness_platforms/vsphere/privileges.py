"""The vCenter privileges a fault's calls need, asked of vCenter for the harness's own session.

What each call requires comes from pyVmomi's type information, which VMware generates from the
API reference (a method's privilege on its object, a parameter's on the entity passed), plus the
conditions the reference states in prose, each cited where it is used. vCenter answers with
`AuthorizationManager.HasPrivilegeOnEntities` for this session's key: a read, which itself needs
System.View, and System.Read on the entities (the same type information).

A missing privilege is found before anything is journaled, named with its entity and the call
that needs it: the run refuses the fault, `doctor` shows the row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from faults.contract import ControlPlaneError, VCenterSession, sdk

# RelocateVM_Task: "Requires the following additional permissions: - Resource.HotMigrate if the
# virtual machine is powered on." (vSphere API reference, VirtualMachine RelocateVM_Task,
# developer.broadcom.com/xapis/virtual-infrastructure-json-api/latest/sdk/vim25/release/VirtualMachine/moId/RelocateVM_Task/post)
HOT_MIGRATE = "Resource.HotMigrate"


class PrivilegeMissing(ControlPlaneError):
    """vCenter says the harness's account lacks a privilege a fault's call needs (exit 10: not ready)."""


@dataclass(frozen=True)
class Need:
    """One privilege on one inventory entity, and the call that needs it."""

    privilege: str
    kind: str  # the entity's vim type name: "HostSystem", "VirtualMachine"
    name: str  # its inventory name
    call: str  # the vim method that needs it: "EnterMaintenanceMode_Task"


def required(kind: str, method: str) -> str:
    """The privilege vim method `method` (its wire name) of type `kind` requires on its object."""
    vim_type = getattr(sdk().vim, kind)
    for info in vim_type._methodInfo.values():
        if info.wsdlName == method:
            if not info.privId:
                raise ValueError(f"vim.{kind}.{method} names no privilege of its own")
            return str(info.privId)
    raise ValueError(f"vim.{kind} has no method {method}")


def needs_of(kind: str, name: str, method: str, *extra: str) -> list[Need]:
    """What calling `method` on the `kind` named `name` needs: its own privilege, and `extra` the reference adds."""
    return [Need(p, kind, name, method) for p in (required(kind, method), *extra)]


def check(session: VCenterSession, needs: Sequence[Need]) -> str:
    """Ask vCenter whether this session holds every need; raise PrivilegeMissing naming each one it lacks."""
    if not needs:
        return "no vCenter privilege needed"
    user = session.vcenter.credential.username
    granted = session.call("HasPrivilegeOnEntities", lambda: _ask(session, needs))
    missing: dict[tuple[str, str, str], list[str]] = {}
    for n in needs:
        if not granted.get((n.kind, n.name, n.privilege), False):
            missing.setdefault((n.privilege, n.kind, n.name), []).append(n.call)
    if missing:
        raise PrivilegeMissing(
            f"{session.where}: vCenter user {user!r} lacks "
            + "; ".join(f"{p} on {kind} {name} ({', '.join(calls)})" for (p, kind, name), calls in missing.items())
            + ": grant them to its role on these objects (or an ancestor, propagated)")
    held = sorted({f"{n.privilege} on {n.kind} {n.name}" for n in needs})
    return f"vCenter user {user!r} holds " + ", ".join(held)


def _ask(session: VCenterSession, needs: Sequence[Need]) -> dict[tuple[str, str, str], bool]:
    """One HasPrivilegeOnEntities per set of privileges: {(kind, name, privilege): granted}."""
    content = session.content()
    key = content.sessionManager.currentSession.key
    refs: dict[tuple[str, str], Any] = {(n.kind, n.name): session.find(n.kind, n.name) for n in needs}
    by_ref = {(type(ref).__name__.rsplit(".", 1)[-1], ref._moId): where for where, ref in refs.items()}
    privileges = sorted({n.privilege for n in needs})
    answer = content.authorizationManager.HasPrivilegeOnEntities(entity=list(refs.values()), sessionId=key,
                                                                 privId=privileges)
    granted: dict[tuple[str, str, str], bool] = {}
    for entity in answer or []:
        kind, name = by_ref[(type(entity.entity).__name__.rsplit(".", 1)[-1], entity.entity._moId)]
        for available in entity.privAvailability or []:
            granted[(kind, name, str(available.privId))] = bool(available.isGranted)
    return granted
