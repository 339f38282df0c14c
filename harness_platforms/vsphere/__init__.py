"""vSphere through vCenter (pyVmomi), read only: discovery checked against the topology, recovery, HA evidence."""
