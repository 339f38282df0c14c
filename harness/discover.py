"""`python -m harness discover`: a draft topology from what the cluster's platforms say; it changes nothing.

The draft starts from the platform that drafts a whole topology (vSphere: `--vcenter`), with the
parts the other platforms' drafters add (SQL Server and WSFC: `--sql`, `--winrm`), each asked with
the command's arguments (`Platform.drafter`, `faults.drafts`). Every call goes through the
transports watched read-only (`faults.transports.wire`): a draft for which anything but a read
was sent, or a session left open, is refused.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from faults.catalogue import installed
from faults.drafts import Drafter, DrafterFactory, DraftOptions, TopologyDrafter
from faults.registry import named
from faults.transports import wire
from harness_kernel.errors import ConfigError


def add_draft_options(parser: argparse.ArgumentParser) -> None:
    """Each installed platform's options for its drafter (`Platform.drafter_options`), on `discover`'s parser: those of
    a platform that hosts clusters first (a draft starts from it)."""
    for platform in sorted(installed().platforms, key=lambda p: not p.hosts_clusters):
        if platform.drafter_options:
            options: DraftOptions = named(platform.drafter_options)
            options(parser)


def drafters(arguments: Mapping[str, Any]) -> tuple[list[TopologyDrafter], list[Drafter]]:
    """Each installed platform's drafter that `arguments` (the command's, by name) asks for: those that draft a
    whole topology, and those that draft a part of one."""
    roots: list[TopologyDrafter] = []
    parts: list[Drafter] = []
    for platform in installed().platforms:
        if platform.drafter:
            factory: DrafterFactory = named(platform.drafter)
            found = factory(arguments)
            if isinstance(found, TopologyDrafter):
                roots.append(found)
            elif found is not None:
                parts.append(found)
    return roots, parts


def draft(arguments: Mapping[str, Any]) -> str:
    """The draft topology (YAML with comments) the arguments ask for, after checking it loads."""
    roots, parts = drafters(arguments)
    if len(roots) != 1:
        raise ConfigError(f"discover: {len(roots)} platforms would start the draft; give the options of one "
                          "(--vcenter)")
    root = roots[0]
    with wire.watching(read_only=True) as sent:
        try:
            root.read()
            for part in parts:
                part.read()
        finally:
            root.close()
    if sent.writes() or sent.left_open():
        raise ConfigError(f"discover sent something other than reads: {sent.writes() or sent.left_open()}")
    vms = root.vms()
    return root.drafted([part.drafted(vms) for part in parts])
