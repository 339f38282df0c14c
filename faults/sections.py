"""A platform's own part of a topology: `management.platforms.<name>` (or its own key), validated by its model.

The core topology keeps each section as plain JSON (it cannot know the models of platforms
installed later); this module reads it through the platform's `section` model, with errors
that name the field path as the core's do, and finds the secret references in it so that a
run checks them up front, resolves them once and masks them like the core's.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ValidationError

from faults.catalogue import Catalogue, installed
from harness_kernel.errors import ConfigError
from harness_kernel.topology.credentials import SecretRef
from harness_kernel.topology.loader import dotted, format_validation_error, one_line
from harness_kernel.topology.models import Topology

Section = TypeVar("Section", bound=BaseModel)
BUILT_IN_KINDS = ("lab",)  # the cluster kind the harness serves itself; the others are platforms' (hosts_clusters)


def _root(name: str, at: str | None = None) -> tuple[str, ...]:
    return ("management", at) if at else ("management", "platforms", name)


def path_of(name: str, at: str | None = None) -> str:
    """`management.platforms.pdu` (or `management.vsan`, a section at its own key), as the core's errors spell a
    field path."""
    return dotted(_root(name, at))


def where(topology: Topology) -> str:
    """What a refusal starts with, as the core's do: the file the topology was read from (its name when code built
    it, as the embedded lab's is)."""
    return topology.origin or f"topology {topology.name!r}"


def section(topology: Topology, name: str, model: type[Section], *, at: str | None = None) -> Section:
    """The platform's section of `topology`, validated by `model` (errors name the file and the field path).

    `at`: the key under `management` of a section topologies have always had there (`vsan`), where it may be
    absent (its model's defaults); otherwise the section is `management.platforms.<name>`, and required."""
    raw = getattr(topology.management, at) if at else topology.management.platforms.get(name)
    if raw is None:
        raise ConfigError(f"{where(topology)}: {path_of(name)} is required by the {name} platform")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(one_line(f"{where(topology)}: {format_validation_error(exc, root=_root(name, at))}")) from None


def check(topology: Topology, catalogue: Catalogue | None = None) -> dict[str, BaseModel]:
    """The topology's kind is one an installed platform hosts, each database's kind one a platform observes, and
    every section is validated by its platform's model: a section no installed platform reads is an error."""
    catalogue = catalogue or installed()
    host = catalogue.platform(topology.kind)
    if topology.kind not in BUILT_IN_KINDS and (host is None or not host.hosts_clusters):
        hosts = [p.name for p in catalogue.platforms if p.hosts_clusters]
        raise ConfigError(f"{where(topology)}: kind: {topology.kind!r} is no platform installed here "
                          f"(known: {', '.join(hosts)}; is its plug-in installed?)")
    kinds = sorted({kind for p in catalogue.platforms for kind, _ in p.databases})
    for index, database in enumerate(topology.databases):
        if database.kind not in kinds:
            raise ConfigError(f"{where(topology)}: databases[{index}].kind: {database.kind!r} is no database kind "
                              f"installed here (known: {', '.join(kinds)}; is its plug-in installed?)")
    validated: dict[str, BaseModel] = {}
    for name in topology.management.platforms:
        platform = catalogue.platform(name)
        if platform is None or platform.section is None:
            readers = [p.name for p in catalogue.platforms if p.section is not None]
            raise ConfigError(f"{where(topology)}: {path_of(name)}: no installed platform reads it "
                              f"(platforms with a section here: {', '.join(readers) or 'none'}; is its plug-in "
                              "installed?)")
        validated[name] = section(topology, name, platform.section)
    for platform in catalogue.platforms:
        if platform.section is not None and platform.section_at:
            validated[platform.name] = section(topology, platform.name, platform.section, at=platform.section_at)
    return validated


def secret_refs(topology: Topology, catalogue: Catalogue | None = None) -> list[tuple[str, SecretRef]]:
    """Every secret reference in the sections, with its field path (a credential's password included)."""
    found: list[tuple[str, SecretRef]] = []
    catalogue = catalogue or installed()
    for name, model in check(topology, catalogue).items():
        platform = catalogue.platform(name)
        found += _refs_in(model, path_of(name, platform.section_at if platform else None))
    return found


def every_secret_ref(topology: Topology, catalogue: Catalogue | None = None) -> list[tuple[str, SecretRef]]:
    """The core topology's secret references, then those in plug-in platforms' sections: what a run checks
    up front and resolves once, and what the guardian masks in its log."""
    return topology.secret_refs() + secret_refs(topology, catalogue)


def _refs_in(value: object, path: str) -> list[tuple[str, SecretRef]]:
    if isinstance(value, SecretRef):
        return [(path, value)]
    if isinstance(value, BaseModel):
        return [ref for field in type(value).model_fields for ref in _refs_in(getattr(value, field), f"{path}.{field}")]
    if isinstance(value, list | tuple):
        return [ref for i, item in enumerate(value) for ref in _refs_in(item, f"{path}[{i}]")]
    if isinstance(value, dict):
        return [ref for key, item in value.items() for ref in _refs_in(item, f"{path}.{key}")]
    return []
