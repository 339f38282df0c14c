"""Contract tests: the SQL Server and WSFC backends against stand-ins written from Microsoft's documentation.

No Windows or SQL Server runs here. The WS-Management stand-in (`tests.support.wsman`) and the
model cluster (`tests.support.wsfc_model`) answer on 127.0.0.1; the SQL side is answered at
the DB-API level (`tests.support.sqlserver_model`). Every test here is marked `contract`.

The model cluster's listeners log in as the transport's default expects (https, NTLM, channel
binding, a throwaway certificate as the trust path); a stand-in started without a site (the
backup tests' per-node ones) takes Basic over http. `pointed_at` is told which.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import variations
from tests.support.contract_world import SQL_PASSWORD_ENV, WINRM_ACCOUNT, WINRM_PASSWORD_ENV, WsfcWorld
from tests.support.sqlserver_model import SqlServerModel
from tests.support.wsfc_model import WsfcModel
from tests.support.wsman import running_wsman
from tests.support.wsman_auth import ACCOUNTS_ENV, WsmanSite


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).parent == Path(__file__).parent:
            item.add_marker(pytest.mark.contract)


@pytest.fixture(autouse=True)
def standin_variations(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The variations this test's stand-ins serve: those named in the environment when a person forces some,
    else those drawn from the seed (HARNESS_STANDIN_SEED, 0 unless set) and the test's id, so a run repeats."""
    if variations.ENV in os.environ:
        chosen, why = sorted(variations.asked()), "as the environment names them"
    else:
        seed = int(os.environ.get(variations.SEED_ENV, "0"))
        chosen, why = variations.seeded(seed, request.node.nodeid), f"{variations.SEED_ENV}={seed}"
        monkeypatch.setenv(variations.ENV, ",".join(chosen))
    request.node.add_report_section("setup", "stand-in variations",
                                    f"{variations.ENV}={','.join(chosen)} ({why})")
    return chosen


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
