"""The target description: sites, hosts, links, databases, endpoints, SLOs and allow-list."""

from harness.topology.loader import load_topology
from harness.topology.models import Topology

__all__ = ["Topology", "load_topology"]
