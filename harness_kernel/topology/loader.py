"""Load a topology from a YAML file with errors that name the file and the field.

Every refusal is one `ConfigError` line: `FILE: field.path: problem` for a value,
`FILE:LINE:COL: problem` for the YAML itself, `FILE: problem` for the file.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from harness_kernel.errors import ConfigError
from harness_kernel.topology.models import DOCUMENT, Topology
from harness_kernel.topology.values import WIDEST_SITE_PREFIX

MAX_BYTES = 1 << 20  # a topology is a few kB; anything this large is the wrong file
MAX_ERRORS = 5


def load_topology(source: str | Path, *, widest_site_prefix: int = WIDEST_SITE_PREFIX) -> Topology:
    """A topology from a YAML file (the embedded lab's comes from `harness.topology_source`).

    `widest_site_prefix` comes from the command line only (`--widest-site-subnet`): a limit the
    file itself could raise would be none."""
    path = Path(source)
    return parse_topology(parse_yaml(read_text(path), str(path)), str(path), widest_site_prefix=widest_site_prefix)


def read_text(path: Path) -> str:
    """The file's text; anything that is not a readable UTF-8 file is a `ConfigError` naming it."""
    try:
        mode = path.stat().st_mode
        if stat.S_ISDIR(mode):
            raise ConfigError(f"{path}: is a directory, not a topology file")
        if not stat.S_ISREG(mode):
            raise ConfigError(f"{path}: not a regular file")
        with path.open("rb") as stream:
            data = stream.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"{path}: topology file not found") from None
    except PermissionError:
        raise ConfigError(f"{path}: cannot read the topology file: permission denied") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the topology file: {exc.strerror or type(exc).__name__}") from None
    if len(data) > MAX_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_BYTES} bytes: not a topology file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None


class DuplicateKeyError(yaml.MarkedYAMLError):
    """A mapping gives the same key twice (PyYAML would silently keep the last)."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that refuses duplicate keys; keys brought in by a `<<` merge may be overridden."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = first_line.get(key)
            except TypeError:
                continue  # an unhashable key: the base constructor reports it
            if first is not None:
                raise DuplicateKeyError(problem=f"duplicate key {key!r} (first at line {first})",
                                        problem_mark=key_node.start_mark)
            first_line[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


def parse_yaml(text: str, origin: str) -> Any:
    """The YAML document in `text`; an error names `origin`, its line and column."""
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        label = "" if isinstance(exc, DuplicateKeyError) else "malformed YAML: "
        raise ConfigError(one_line(f"{origin}{where}: {label}{problem}")) from None
    except RecursionError:
        raise ConfigError(f"{origin}: nested too deeply to be a topology") from None


def parse_topology(raw: Any, origin: str, *, widest_site_prefix: int = WIDEST_SITE_PREFIX) -> Topology:
    """Validate a document (refusing what only code may build, such as `kind: lab`); the topology keeps `origin`, so
    that what is checked once it is loaded (a plug-in platform's section) names the file too."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin}: top level: expected a mapping of fields, got {type(raw).__name__}")
    try:
        return Topology.model_validate(raw, context={**DOCUMENT, "widest_site_prefix": widest_site_prefix,
                                                     "origin": origin})
    except ValidationError as exc:
        raise ConfigError(one_line(f"{origin}: {format_validation_error(exc)}")) from None
    except RecursionError:
        raise ConfigError(f"{origin}: nested too deeply to be a topology") from None


def format_validation_error(exc: ValidationError, root: str | tuple[int | str, ...] = "") -> str:
    """One line: each error's field path (under `root`, e.g. `params` or a section's path) and what was expected."""
    parts = []
    errors = exc.errors()
    under = root if isinstance(root, tuple) else (root,) if root else ()
    for err in errors[:MAX_ERRORS]:
        loc = dotted(under + tuple(err["loc"]))
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown field"
        elif err["type"] == "invalid_key":
            message = "field names are strings"
        parts.append(f"{loc}: {message}" if loc else message)
    if len(errors) > MAX_ERRORS:
        parts.append(f"and {len(errors) - MAX_ERRORS} more")
    return "; ".join(parts)


def dotted(loc: tuple[int | str, ...]) -> str:
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
