"""Contract tests: the SQL Server and WSFC backends against stand-ins written from Microsoft's documentation.

No Windows or SQL Server runs here. The WS-Management stand-in (`tests.support.wsman`) and the
model cluster (`tests.support.wsfc_model`) answer on 127.0.0.1; the SQL side is answered at
the DB-API level (`tests.support.sqlserver_model`). Every test here is marked `contract`.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.topology.loader import parse_topology
from harness.topology.models import Topology
from tests.support.sqlserver_model import SqlServerModel
from tests.support.wsfc_model import WsfcModel
from tests.support.wsman import RunningWsman, running_wsman

ROOT = Path(__file__).resolve().parents[3]
WINRM_PASSWORD_ENV = "HARNESS_WINRM_PASSWORD"
SQL_PASSWORD_ENV = "HARNESS_SQL_PASSWORD"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).parent == Path(__file__).parent:
            item.add_marker(pytest.mark.contract)


def example(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "examples" / name).read_text())
    return loaded


def pointed_at(doc: dict[str, Any], ports: list[int]) -> Topology:
    """The example with its winrm endpoints on the local stand-ins, in order (plain http, basic: 127.0.0.1 only)."""
    for endpoint, port in zip(doc["management"]["winrm"], ports, strict=True):
        endpoint.update(address="127.0.0.1", port=port, scheme="http", transport="basic")
        endpoint["credential"]["username"] = "harness"
    return parse_topology(doc, "contract.yaml")


@dataclass
class WsfcWorld:
    model: WsfcModel
    first: RunningWsman
    second: RunningWsman
    password: str

    def topology(self, example_name: str = "stretched-fci.yaml", *, first_port: int | None = None) -> Topology:
        return pointed_at(example(example_name), [first_port or self.first.port, self.second.port])


@pytest.fixture
def winrm_password(monkeypatch: pytest.MonkeyPatch) -> str:
    password = "Pw-" + secrets.token_urlsafe(12)
    monkeypatch.setenv(WINRM_PASSWORD_ENV, password)
    return password


@pytest.fixture
def wsfc(winrm_password: str) -> Iterator[WsfcWorld]:
    """One model cluster behind two WinRM endpoints (its two nodes' listeners)."""
    model = WsfcModel()
    with running_wsman(model, "harness", winrm_password) as first, \
            running_wsman(model, "harness", winrm_password) as second:
        yield WsfcWorld(model, first, second, winrm_password)


@pytest.fixture
def sql(monkeypatch: pytest.MonkeyPatch) -> SqlServerModel:
    """A two-replica availability group AG01 (sql01 primary in site-a, sql02 in site-b), as the AG example names it."""
    password = "Sql-" + secrets.token_urlsafe(12)
    monkeypatch.setenv(SQL_PASSWORD_ENV, password)
    return SqlServerModel(password=password)


def ag_topology(ports: list[int] | None = None) -> Topology:
    """The AG example; its winrm endpoints on local stand-ins when `ports` are given (else left as written)."""
    doc = example("stretched-2plus2.yaml")
    return pointed_at(doc, ports) if ports else parse_topology(doc, "contract.yaml")
