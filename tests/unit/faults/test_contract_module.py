"""A platform imports one module of the harness, `faults.contract` (a database platform the workload's dialect as well),
and its conditions see its validated section."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from faults.contract import on_section
from harness_kernel.errors import ConfigError
from harness_kernel.topology.targets import Target
from tests.unit.faults import toy_platform
from tests.unit.faults.test_sections import SECTION, with_section

ROOT = Path(__file__).resolve().parents[3]
PLATFORM_PACKAGES = {**{p.parent.name: p.parent for p in (ROOT / "harness_platforms").glob("*/__init__.py")},
                     "harness_pdu": ROOT / "examples/harness-pdu/harness_pdu"}
HARNESS = ("faults", "harness", "harness_kernel", "harness_lab", "harness_suites", "reports", "workloads")


def harness_imports(package: Path) -> dict[str, set[str]]:
    """Each module's imports of the harness (its own package left out), lazy and TYPE_CHECKING ones included."""
    found: dict[str, set[str]] = {}
    for module in package.rglob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            found.setdefault(str(module.relative_to(package)), set()).update(n for n in names if n.split(".")[0] in HARNESS)
    return found


ALLOWED = {"faults.contract"}
DATABASE_VIEWS = {"sqlserver": {"view.py"}, "vsphere": {"view.py"}}  # a view that returns the workload's connection


@pytest.mark.parametrize("name", sorted(PLATFORM_PACKAGES))
def test_a_platform_imports_nothing_of_the_harness_but_the_contract_module(name: str) -> None:
    imports = harness_imports(PLATFORM_PACKAGES[name])
    views = DATABASE_VIEWS.get(name, set())
    beyond = {m: i - ALLOWED - ({"workloads.oltp"} if m in views else set()) for m, i in imports.items()}
    assert {m: i for m, i in beyond.items() if i} == {}
    assert any(imports.values()), "it does import the contract"


def test_every_module_of_a_platform_in_a_subfolder_is_read_too() -> None:
    assert "wsfc/faults.py" in harness_imports(PLATFORM_PACKAGES["sqlserver"])


FED = on_section("the host is fed by an outlet of management.platforms.toy", "toy", toy_platform.ToySection,
                 lambda target, topology, toy: target.name in toy.outlets)


def test_a_condition_on_the_section_sees_the_validated_model_and_holds_nowhere_without_one() -> None:
    fed = with_section(SECTION)  # esx-a1 has outlet 3
    assert FED.holds(Target.parse("host:esx-a1"), fed) and not FED.holds(Target.parse("host:esx-b1"), fed)
    without = with_section(SECTION)
    without.management.platforms.clear()
    assert not FED.holds(Target.parse("host:esx-a1"), without)
    with pytest.raises(ConfigError, match=r"management.platforms.toy.outlets\['esx-a1'\]"):
        FED.holds(Target.parse("host:esx-a1"), with_section({**SECTION, "outlets": {"esx-a1": "three"}}))
