"""Load a topology from a YAML file with errors that name the file and the field.

Every refusal is one `ConfigError` line: `FILE: field.path: problem` for a value,
`FILE:LINE:COL: problem` for the YAML itself, `FILE: problem` for the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from harness.errors import ConfigError
from harness.topology.models import DOCUMENT, Topology

MAX_ERRORS = 5


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
        raise ConfigError(one_line(f"{path}{where}: malformed YAML: {problem}")) from None
    return parse_topology(raw, str(path))


def parse_topology(raw: Any, origin: str) -> Topology:
    """Validate a document (refusing what only code may build, such as `kind: lab`)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin}: top level: expected a mapping of fields, got {type(raw).__name__}")
    try:
        return Topology.model_validate(raw, context=DOCUMENT)
    except ValidationError as exc:
        raise ConfigError(one_line(f"{origin}: {format_validation_error(exc)}")) from None
    except RecursionError:
        raise ConfigError(f"{origin}: nested too deeply to be a topology") from None


def format_validation_error(exc: ValidationError) -> str:
    parts = []
    errors = exc.errors()
    for err in errors[:MAX_ERRORS]:
        loc = _dotted(err["loc"])
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown field"
        elif err["type"] == "invalid_key":
            message = "field names are strings"
        parts.append(f"{loc}: {message}" if loc else message)
    if len(errors) > MAX_ERRORS:
        parts.append(f"and {len(errors) - MAX_ERRORS} more")
    return "; ".join(parts)


def _dotted(loc: tuple[int | str, ...]) -> str:
    """('sites', 0, 'name') -> sites[0].name; a map's key -> interfaces['site-a']."""
    out = ""
    for item in loc:
        if isinstance(item, int):
            out += f"[{item}]"
        elif item == "[key]":
            continue  # pydantic's marker for "the key itself": the key is already in the path
        elif item.isidentifier() and item.isascii():
            out += ("." if out else "") + item
        else:
            out += f"[{item!r}]"
    return out


def one_line(message: str) -> str:
    """Escape anything that would break the line (values in messages can be hostile)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
