"""Every fact a stand-in serves has a source, and a documented fact's served value is in its own quote.

(Served from the Operational channel while citing the System-log article is what this catches.)"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from tests.support import sqlserver_backup_model
from tests.support.provenance import OWN_TOKENS, Fact, Facts, unsourced_literals
from tests.support.stand_in_tables import TABLES


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.name)
def test_every_served_fact_has_a_source_and_its_value_is_in_its_quote(table: Facts) -> None:
    assert table.problems() == []
    print(f"\n{table.name}: {len(table.rows)} facts, each with a source")


def test_the_check_catches_a_value_its_quote_does_not_hold() -> None:
    wrong = Facts("example", [Fact("event.1135.log", "Microsoft-Windows-FailoverClustering/Operational", "documented",
                                   "the System-log article", "events from the Windows Server System log")])
    assert wrong.problems() == ["example: event.1135.log: served 'Microsoft-Windows-FailoverClustering/Operational', "
                                "which its quote does not contain: 'events from the Windows Server System log'"]
    assert Facts("x", [Fact("a", 1, "assumed", "none")]).problems() == [
        "x: a: an assumed fact names the assumption it mirrors (A-...)"]


STAND_IN_MODULES = {"wsfc_model": ("tests/support/wsfc_model.py",), "sqlserver_model": ("tests/support/sqlserver_model.py",),
                    "sqlserver_restore": ("tests/support/sqlserver_restore_model.py",),
                    "sqlserver_backup": ("tests/support/sqlserver_backup_model.py",),
                    "wsman": ("tests/support/wsman.py", "tests/support/wsman_auth.py"),
                    "vplex": ("tests/support/vplex_model.py",), "prism": ("tests/support/prism_model.py",)}


def served_literals(path: Path, values: set[str]) -> list[str]:
    """String constants of `path`, outside its FACTS table, that equal a served value (read around the table)."""
    tree = ast.parse(path.read_text())
    table = {id(node) for stmt in tree.body if isinstance(stmt, ast.Assign)
             and any(isinstance(t, ast.Name) and t.id == "FACTS" for t in stmt.targets) for node in ast.walk(stmt)}
    return sorted({f"{path.name}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
                   if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in table
                   and node.value in values})


@pytest.mark.parametrize("table", [t for t in TABLES if t is not sqlserver_backup_model.FACTS], ids=lambda t: t.name)
def test_a_stand_in_serves_its_documented_values_only_through_its_table(table: Facts) -> None:
    """Short values ("System", "200 OK") are too common to search for; the distinctive ones must not be
    written a second time beside the table (where they would be served without their source). The backup model's
    values are all short: the enum scan below covers them."""
    root = Path(__file__).resolve().parents[2]
    values = {str(f.value) for f in table.rows.values() if f.kind == "documented" and len(str(f.value)) >= 12}
    assert values, "the table has distinctive values to look for"
    assert [hit for path in STAND_IN_MODULES[table.name] for hit in served_literals(root / path, values)] == []


ENUM_SCANNED = ("tests/support/sqlserver_model.py", "tests/support/sqlserver_backup_model.py",
                "tests/support/sqlserver_restore_model.py", "tests/support/wsfc_model.py", "tests/support/vplex_model.py",
                "tests/support/prism_model.py", "tests/support/wsman.py", "tests/support/wsman_auth.py")


@pytest.mark.parametrize("path", ENUM_SCANNED, ids=lambda p: Path(p).stem)
def test_every_enum_shaped_value_a_stand_in_writes_comes_from_its_table(path: str) -> None:
    """A role, a state, a SQLSTATE written beside the table is served without a source (role_desc PRIMARY was);
    what a stand-in only reads from requests, or names in its own world, it lists in OWN_TOKENS."""
    root = Path(__file__).resolve().parents[2]
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    assert unsourced_literals((root / path).read_text(), getattr(module, OWN_TOKENS, frozenset())) == []


def test_the_scan_names_a_value_served_beside_the_table_and_spares_the_table_and_own_tokens() -> None:
    source = '''
FACTS = Facts("x", [Fact("role.primary", "PRIMARY", "documented", "a page", "role_desc PRIMARY")])
OWN_TOKENS = frozenset({"UID"})
ROLE = str(FACTS.value("role.primary"))
def answer(attributes):
    login = attributes.get("UID")
    return [(ROLE, "SYNCHRONIZED")]
'''
    assert unsourced_literals(source, {"UID"}) == ["7: 'SYNCHRONIZED'"]
