"""What `--topology` names: a YAML file, or the embedded lab (`lab` / `lab:PREFIX`), resolved once.

Like testinfra's host specs, the scheme picks the source: `lab:` builds the lab's topology
in code (no file can claim to be the lab), anything else is a path to a YAML file.
"""

from __future__ import annotations

from pathlib import Path

from faults import sections
from harness_kernel.errors import ConfigError
from harness_kernel.topology.loader import load_topology
from harness_kernel.topology.models import LAB_PREFIX, LabSettings, Topology
from harness_kernel.topology.values import WIDEST_SITE_PREFIX, shown
from harness_lab.layout import LabLayout

LAB_SCHEME = "lab"


def is_lab(source: str) -> bool:
    return source == LAB_SCHEME or source.startswith(LAB_SCHEME + ":")


def canonical(source: str) -> str:
    """What the journal records: the lab source as given, a file as its absolute path."""
    return source if is_lab(source) else str(Path(source).resolve())


def load_source(source: str | Path, *, widest_site_prefix: int = WIDEST_SITE_PREFIX) -> Topology:
    """The topology `source` names; errors name the file and the field (one line, never a traceback)."""
    text = str(source)
    if not is_lab(text):
        topology = load_topology(Path(text), widest_site_prefix=widest_site_prefix)
        sections.check(topology)  # plug-in platforms' sections, by their own models, before anything is planned
        return topology
    prefix = text.partition(":")[2]
    if prefix and not LAB_PREFIX.fullmatch(prefix):
        raise ConfigError(f"--topology {shown(text)}: a lab prefix is 2-8 lower-case letters and digits, starting "
                          "with a letter (e.g. lab:hlab)")
    settings = LabSettings(prefix=prefix) if prefix else LabSettings()
    return LabLayout.from_settings(settings).topology()
