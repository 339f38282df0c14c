"""What a vSphere + vSAN cluster must be for the suites' findings to mean what they say, read before a run.

Each is a read-only `faults.base.Check` of the cluster view, one row each in `doctor`:

- **the database VMs' data survives a site**: vSAN places each of their objects' data components
  in both sites (a storage policy with site mirroring). Read from where vSAN put them, not from
  the policy's name: an object with all its data in one site is lost with that site, and a site
  failure suite would measure the loss of the database, not a failover.
- **vSphere HA restarts VMs after a host failure**: HA on with host monitoring enabled (else the
  host and site suites measure VMs that stay down); its admission control and isolation response
  are said.
- **vCenter's clock**: the phases of a failover are aligned by the measured offset; an offset
  past `CLOCK_WARN_S` still works but says NTP is not doing its job.

What is not right but does not stop a run is `Uncertain` (a WARN); what makes a run meaningless raises.
"""

from __future__ import annotations

from typing import Any

from faults.contract import Check, HarnessError, Topology, Uncertain, VCenterSession
from harness_platforms.vsphere import probes as vsphere
from harness_platforms.vsphere.vsan.probes import VsanCluster

CLOCK_WARN_S = 2.0


def checks(topology: Topology, session: VCenterSession, vsan: VsanCluster) -> list[Check]:
    return [
        Check("the database VMs' data is mirrored across the sites", lambda: site_mirroring(topology, session, vsan),
              "give the database VMs a storage policy with site disaster tolerance (site mirroring) and let vSAN "
              "reconfigure their objects"),
        Check("vSphere HA restarts VMs after a host failure", lambda: ha_restarts(topology, session),
              "turn on vSphere HA with host monitoring for the cluster"),
        Check("vCenter's clock", lambda: clock(session),
              "point vCenter and this machine at the same NTP servers"),
    ]


def site_mirroring(topology: Topology, session: VCenterSession, vsan: VsanCluster) -> str:
    seen = vsphere.discover(session, topology)
    said, lost = [], []
    for vm in (vsphere.node_vm(node) for _, node in vsphere.database_vms(topology)):
        objects: dict[str, set[str]] = {}
        for placed in vsan.vm_placement(vm):
            if placed.kind == "Component" and placed.host in seen.hosts:
                objects.setdefault(placed.object_uuid, set()).add(seen.hosts[placed.host].site)
        one_site = {uuid: sites for uuid, sites in objects.items() if len(sites) < 2}
        lost += [f"VM {vm}'s object {uuid} has all its data in {', '.join(sorted(sites)) or 'no site'}"
                 for uuid, sites in sorted(one_site.items())]
        said.append(f"{vm}: {len(objects)} objects, each with data in "
                    f"{' and '.join(sorted(set().union(*objects.values())))}")
    if lost:
        raise HarnessError(f"{session.where}: " + "; ".join(lost) + ": a site failure loses it")
    return "; ".join(said) or "no database VM in the topology"


def ha_restarts(topology: Topology, session: VCenterSession) -> str:
    vcenter = topology.management.vcenter
    assert vcenter is not None  # the cluster view was built from it
    config = session.read(session.find("ClusterComputeResource", vcenter.cluster), ["configurationEx"],
                          f"reading cluster {vcenter.cluster}'s configuration")["configurationEx"]
    das: Any = getattr(config, "dasConfig", None)
    # hostMonitoring unset is its default, enabled ("host_monitoring: Determines whether HA restarts virtual
    # machines after a host fails ... Default - enabled", the Salt vSphere extension's reference for this field)
    enabled = bool(getattr(das, "enabled", False))
    monitoring = str(getattr(das, "hostMonitoring", "") or "enabled")
    admission = "on" if getattr(das, "admissionControlEnabled", False) else "off"
    isolation = str(getattr(getattr(das, "defaultVmSettings", None), "isolationResponse", None) or "not set")
    said = f"HA {'on' if enabled else 'off'}, host monitoring {monitoring}, admission control " \
           f"{admission}, isolation response {isolation}"
    if not enabled or monitoring != "enabled":
        raise Uncertain(f"{said}: after a host failure its VMs stay down; the host and site suites measure that, "
                        "not a restart")
    return said


def clock(session: VCenterSession) -> str:
    offset = session.clock_offset()
    said = f"{abs(offset):.2f} s {'ahead of' if offset >= 0 else 'behind'} this machine's"
    if abs(offset) > CLOCK_WARN_S:
        raise Uncertain(f"vCenter's clock is {said}: phases are aligned by the measured offset, but past "
                        f"{CLOCK_WARN_S:g} s NTP is not keeping them together")
    return f"vCenter's clock is {said}"
