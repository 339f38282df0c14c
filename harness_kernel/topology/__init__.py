"""The target description: sites, hosts, links, databases, endpoints, SLOs and allow-list."""

from harness_kernel.topology.loader import load_topology
from harness_kernel.topology.models import Topology

__all__ = ["Topology", "load_topology"]
