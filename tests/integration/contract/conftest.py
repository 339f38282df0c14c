"""Contract tests: the SQL Server and WSFC backends against stand-ins written from Microsoft's documentation.

No Windows or SQL Server runs here. The WS-Management stand-in (`tests.support.wsman`) and the
model cluster (`tests.support.wsfc_model`) answer on 127.0.0.1; the SQL side is answered at
the DB-API level (`tests.support.sqlserver_model`). Every test here is marked `contract`.

The model cluster's listeners log in as the transport's default expects (https, NTLM, channel
binding, a throwaway certificate as the trust path); a stand-in started without a site (the
backup tests' per-node ones) takes Basic over http. `pointed_at` is told which.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness_kernel.topology.loader import parse_topology
from harness_kernel.topology.models import Topology
from tests.support.sqlserver_model import SqlServerModel
from tests.support.wsfc_model import WsfcModel
from tests.support.wsman import RunningWsman, running_wsman
from tests.support.wsman_auth import ACCOUNTS_ENV, WsmanSite

ROOT = Path(__file__).resolve().parents[3]
WINRM_PASSWORD_ENV = "HARNESS_WINRM_PASSWORD"
SQL_PASSWORD_ENV = "HARNESS_SQL_PASSWORD"
WINRM_ACCOUNT = "EXAMPLE\\harness"  # the examples' winrm login, the model cluster's NTLM account


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).parent == Path(__file__).parent:
            item.add_marker(pytest.mark.contract)


def example(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "examples" / name).read_text())
    return loaded


def pointed_at(doc: dict[str, Any], ports: list[int], site: WsmanSite | None = None) -> Topology:
    """The example with its winrm endpoints on the local stand-ins, in order: with `site`, as the transport's
    default (https, ntlm, the site's certificate as trust path); without, plain http and basic (127.0.0.1 only)."""
    for endpoint, port in zip(doc["management"]["winrm"], ports, strict=True):
        endpoint.update(address="127.0.0.1", port=port)
        if site is None:
            endpoint.update(scheme="http", transport="basic")
            endpoint["credential"]["username"] = "harness"
        else:
            endpoint.update(scheme="https", transport="ntlm", tls={"ca_file": str(site.certificate)})
            endpoint["credential"]["username"] = WINRM_ACCOUNT
    return parse_topology(doc, "contract.yaml")


@dataclass
class WsfcWorld:
    model: WsfcModel
    first: RunningWsman
    second: RunningWsman
    password: str
    site: WsmanSite

    def topology(self, example_name: str = "stretched-fci.yaml", *, first_port: int | None = None) -> Topology:
        return pointed_at(example(example_name), [first_port or self.first.port, self.second.port], self.site)


@pytest.fixture
def winrm_password(monkeypatch: pytest.MonkeyPatch) -> str:
    password = "Pw-" + secrets.token_urlsafe(12)
    monkeypatch.setenv(WINRM_PASSWORD_ENV, password)
    return password


@pytest.fixture
def wsman_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> WsmanSite:
    """A throwaway listener certificate and NTLM account file for this test's stand-ins; NTLM_USER_FILE names the
    file (pyspnego's acceptor reads it) until the test ends."""
    site = WsmanSite.create(tmp_path / "wsman")
    monkeypatch.setenv(ACCOUNTS_ENV, str(site.accounts))
    return site


@pytest.fixture
def wsfc(winrm_password: str, wsman_site: WsmanSite) -> Iterator[WsfcWorld]:
    """One model cluster behind two WinRM endpoints (its two nodes' listeners: https, NTLM, channel binding; each
    command's output over two Receives)."""
    model = WsfcModel()
    with running_wsman(model, WINRM_ACCOUNT, winrm_password, site=wsman_site, receives=2) as first, \
            running_wsman(model, WINRM_ACCOUNT, winrm_password, site=wsman_site, receives=2) as second:
        yield WsfcWorld(model, first, second, winrm_password, wsman_site)


@pytest.fixture
def sql(monkeypatch: pytest.MonkeyPatch) -> SqlServerModel:
    """A two-replica availability group AG01 (sql01 primary in site-a, sql02 in site-b), as the AG example names it."""
    password = "Sql-" + secrets.token_urlsafe(12)
    monkeypatch.setenv(SQL_PASSWORD_ENV, password)
    return SqlServerModel(password=password)


def ag_topology(ports: list[int] | None = None, site: WsmanSite | None = None) -> Topology:
    """The AG example; its winrm endpoints on local stand-ins when `ports` are given (else left as written)."""
    doc = example("stretched-2plus2.yaml")
    return pointed_at(doc, ports, site) if ports else parse_topology(doc, "contract.yaml")
