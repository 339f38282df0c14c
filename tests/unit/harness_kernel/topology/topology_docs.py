"""Topology documents for tests: the shipped example as a dict, edited by field path."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).parents[4]
EXAMPLE = ROOT / "examples" / "stretched-2plus2.yaml"

_TOKEN = re.compile(r"\.?([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\['([^']*)'\]")


def example() -> dict[str, Any]:
    """The shipped example, plus a local process, so every kind of field is present."""
    data: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    data["processes"] = [{"name": "fio-server", "pidfile": "/run/fio-server.pid", "executable": "/usr/bin/fio"}]
    return data


def keys(path: str) -> list[str | int]:
    """`sites[0].hosts[1].name` -> ['sites', 0, 'hosts', 1, 'name']; `interfaces['site-a']` -> [..., 'site-a']."""
    out: list[str | int] = []
    pos = 0
    while pos < len(path):
        match = _TOKEN.match(path, pos)
        assert match, f"bad path {path!r} at {pos}"
        field, index, key = match.groups()
        out.append(int(index) if index is not None else field if field is not None else key)
        pos = match.end()
    return out


def set_at(doc: Any, path: str, value: Any) -> Any:
    """Set the field at `path` (creating the last key if absent) and return the document."""
    *parents, last = keys(path)
    node = doc
    for key in parents:
        node = node[key]
    node[last] = value
    return doc


def write(tmp_path: Path, data: object, name: str = "bad.yaml") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path
