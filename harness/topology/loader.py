"""Load a topology from YAML (or the embedded lab) with errors that name file and field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from harness.errors import ConfigError
from harness.topology.models import Topology


def load_topology(source: str | Path) -> Topology:
    """A topology from a YAML file (the embedded lab's comes from `harness.topology_source`)."""
    path = Path(source)
    try:
        raw = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: topology file not found") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{path}{where}: malformed YAML: {problem}") from None
    return parse_topology(raw, str(path))


def parse_topology(raw: Any, origin: str) -> Topology:
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin}: expected a mapping at the top level, got {type(raw).__name__}")
    try:
        return Topology.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{origin}: {format_validation_error(exc)}") from None


def format_validation_error(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = _dotted(err["loc"])
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown field"
        parts.append(f"{loc}: {message}" if loc else message)
    return "; ".join(parts)


def _dotted(loc: tuple[int | str, ...]) -> str:
    out = ""
    for item in loc:
        if isinstance(item, int):
            out += f"[{item}]"
        else:
            out += ("." if out else "") + item
    return out
