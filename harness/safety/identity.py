"""What a fault was done to: a cluster identified by where it is managed (vCenter address and cluster), not by
the name a topology file gives it. Who owns a fault is `harness_kernel.procs.ProcessIdentity`."""

from __future__ import annotations

import hashlib

from harness_kernel.topology.models import Topology


def cluster_identity(topology: Topology) -> str:
    """What a run's lock and the journal call the target, whatever the topology file names it.

    vSphere: the vCenter address and the cluster (two files for one cluster are one target);
    the embedded lab: its prefix; otherwise the set of host addresses.
    """
    if topology.kind == "lab" and topology.lab is not None:
        return f"lab:{topology.lab.prefix}"
    vcenter = topology.management.vcenter
    if vcenter is not None:
        return f"vcenter:{vcenter.address.lower()}:{vcenter.port}/{vcenter.cluster}"
    addresses = sorted({h.address.lower() for h in topology.hosts()})
    digest = hashlib.sha256(",".join(addresses).encode()).hexdigest()[:16]
    return f"hosts:{digest} ({', '.join(addresses[:3])}{', ...' if len(addresses) > 3 else ''})"
