"""The `nutanix` platform's descriptor, found through the `resilience_harness.platforms` entry point.

SDK-free and import-light: backends, the cluster part, probes and observers are named as strings and
imported only when a topology uses them.
"""

from __future__ import annotations

from faults.platform import Platform

PLATFORM = Platform("nutanix", (), hosts_clusters=True, summary="Nutanix AHV through Prism Central v4")
