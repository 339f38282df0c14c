"""The contract tests' world: the examples pointed at local WS-Management stand-ins, the model cluster behind them.

Shared by the fixtures of `tests/integration/contract` and its tests (helpers live here, fixtures there).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from faults.base import Operation, OperationProgress
from harness_kernel.topology.loader import parse_topology
from harness_kernel.topology.models import Topology
from tests.support.wsfc_model import WsfcModel
from tests.support.wsman import RunningWsman
from tests.support.wsman_auth import WsmanSite

ROOT = Path(__file__).resolve().parents[2]
WINRM_PASSWORD_ENV = "HARNESS_WINRM_PASSWORD"
SQL_PASSWORD_ENV = "HARNESS_SQL_PASSWORD"
WINRM_ACCOUNT = "EXAMPLE\\harness"  # the examples' winrm login, the model cluster's NTLM account



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


def ag_topology(ports: list[int] | None = None, site: WsmanSite | None = None) -> Topology:
    """The AG example; its winrm endpoints on local stand-ins when `ports` are given (else left as written)."""
    doc = example("stretched-2plus2.yaml")
    return pointed_at(doc, ports, site) if ports else parse_topology(doc, "contract.yaml")


def finish(fault: Operation, timeout_s: float = 10.0) -> OperationProgress:
    """An operation's report once it has ended (or `timeout_s` passed)."""
    deadline = time.monotonic() + timeout_s
    while (progress := fault.progress()).running and time.monotonic() < deadline:
        time.sleep(0.05)
    return progress


def injected_and_watched(fault: Any) -> float:
    """Inject an operation and read its progress twice while it runs: its percent grows under 100, its start is
    the server's (within the round trip of the wall clock when it was sent); returns that wall clock."""
    sent = time.time()
    fault.inject()
    first = fault.progress()
    time.sleep(0.2)
    second = fault.progress()
    assert first.running and second.running and first.bytes_total is None
    assert first.percent is not None and second.percent is not None and 0 <= first.percent < second.percent < 100
    assert second.started_wall is not None and abs(second.started_wall - sent) < 0.3, "the request's start_time"
    return sent
