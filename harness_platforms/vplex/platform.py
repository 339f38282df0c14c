"""The `vplex` platform's descriptor, found through the `resilience_harness.platforms` entry point.

Observed only: the harness cuts the link or isolates the witness below the storage (router, lab)
and reads what the metro storage decided; it serves no fault kind, so it never resumes, detaches
or patches anything. SDK-free: the view is named as strings and imported only when a topology
has a `management.platforms.vplex` section.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from faults.contract import Platform
from harness_platforms.vplex.assumptions import ASSUMPTIONS
from harness_platforms.vplex.section import NAME, VplexSection

if TYPE_CHECKING:  # mypy checks each class against the contract; at run time nothing is imported
    from faults.contract import ClusterPartClass, ObserverClass, Probe
    from harness_platforms.vplex.view import VplexMetro, probe, probe_assumptions

    _view: tuple[ClusterPartClass, ObserverClass, Probe, Probe] = (VplexMetro, VplexMetro, probe, probe_assumptions)

_VIEW = "harness_platforms.vplex.view"

PLATFORM = Platform(NAME, (), section=VplexSection, cluster_part=f"{_VIEW}:VplexMetro",
                    probes=(f"{_VIEW}:probe", f"{_VIEW}:probe_assumptions"), observers=(f"{_VIEW}:VplexMetro",),
                    summary="Dell VPLEX / metro node (REST API v2), observed only", assumptions=ASSUMPTIONS)
