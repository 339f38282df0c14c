"""`harness schema`: the topology's JSON Schema with every installed platform's section, what editors read.

The examples carry the `yaml-language-server` line that points an editor at the shipped schema
(`docs/topology.schema.json`), which is the command's output, regenerated with
`python -m harness schema > docs/topology.schema.json`.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from faults.catalogue import installed
from harness.cli import main
from harness.schema import topology_schema

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ROOT / "docs" / "topology.schema.json"
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
SCHEMA_LINE = "# yaml-language-server: $schema=../docs/topology.schema.json"


def schema() -> dict[str, Any]:
    return topology_schema(installed({}))  # the plug-ins of this environment, autoloading or not


def errors(document: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema())
    return [f"{'/'.join(str(p) for p in e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]


def test_the_command_prints_the_shipped_schema() -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["schema"]) == 0
    assert json.loads(printed.getvalue()) == json.loads(SHIPPED.read_text()), \
        "regenerate it: python -m harness schema > docs/topology.schema.json"
    jsonschema.Draft202012Validator.check_schema(json.loads(SHIPPED.read_text()))


def test_each_installed_platform_s_section_is_in_the_schema_where_the_topology_keeps_it() -> None:
    """Under `management.platforms`, or at the key a section has always had (vSAN's `management.vsan`)."""
    management = schema()["$defs"]["Management"]["properties"]
    sections = {p.name: p.section_at for p in installed({}).platforms if p.section is not None}
    assert set(management["platforms"]["properties"]) == {name for name, at in sections.items() if not at} >= {"nutanix"}
    assert sections["vsan"] == "vsan" and management["vsan"] == {"$ref": "#/$defs/vsan.VsanSettings"}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_example_names_the_schema_and_holds_to_it(example: Path) -> None:
    assert example.read_text().splitlines()[0] == SCHEMA_LINE
    assert errors(yaml.safe_load(example.read_text())) == []


def test_a_mistake_in_a_platform_s_section_is_named_by_the_schema() -> None:
    document = yaml.safe_load((ROOT / "examples" / "nutanix-ahv-esrp.yaml").read_text())
    document["management"]["platforms"]["nutanix"]["timeout_s"] = "ten"
    document["management"]["platforms"]["nutanix"]["verify_tsl"] = False
    found = errors(document)
    assert any(e.startswith("management/platforms/nutanix/timeout_s: 'ten'") for e in found), found
    assert any("verify_tsl" in e for e in found), found
