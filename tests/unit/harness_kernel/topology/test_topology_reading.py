"""Rule 3: reading the file: duplicate keys are refused with their line, and a directory,
an unreadable file or non-UTF-8 bytes are a clear `ConfigError` naming the file (safety.md #21)."""

from __future__ import annotations

import pathlib
from pathlib import Path

import pytest

from harness_kernel.errors import ConfigError
from harness_kernel.topology.loader import load_topology
from tests.unit.harness_kernel.topology.topology_docs import EXAMPLE, write


def test_a_duplicate_key_is_refused_with_its_line(tmp_path: Path) -> None:
    text = EXAMPLE.read_text() + "\nallow_list: [host:esx-a1]\n"
    line = text.count("\n")
    with pytest.raises(ConfigError, match=rf"bad\.yaml:{line}:1: duplicate key 'allow_list' \(first at line \d+\)"):
        load_topology(write(tmp_path, text))


def test_a_duplicate_key_in_a_nested_mapping_is_refused(tmp_path: Path) -> None:
    text = "name: t\nsites:\n  - name: a\n    name: b\n    hosts: [{name: h, address: 192.0.2.1}]\n"
    with pytest.raises(ConfigError, match=r"bad\.yaml:4:5: duplicate key 'name' \(first at line 3\)"):
        load_topology(write(tmp_path, text))


def test_a_merge_key_may_be_overridden(tmp_path: Path) -> None:
    text = ("name: t\nsites:\n  - &a {name: a, hosts: [{name: h, address: 192.0.2.1}]}\n"
            "  - <<: *a\n    name: b\n    hosts: [{name: h2, address: 192.0.2.2}]\n")
    assert [s.name for s in load_topology(write(tmp_path, text)).sites] == ["a", "b"]


def test_a_directory_is_a_config_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=rf"^{tmp_path}: .*directory"):
        load_topology(tmp_path)


def test_an_unreadable_file_is_a_config_error_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "name: t\n")

    def denied(self: Path, *args: object, **kwargs: object) -> object:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(pathlib.Path, "open", denied)  # we run as root in CI: chmod 000 would not stop us
    with pytest.raises(ConfigError, match=rf"^{path}: .*permission denied"):
        load_topology(path)


def test_a_file_that_is_not_utf8_is_a_config_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: café\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=rf"^{path}: not UTF-8 text"):
        load_topology(path)
