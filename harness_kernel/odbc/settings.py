"""Typed connection settings: where the database is, who logs in, and how long to wait."""

from __future__ import annotations

from dataclasses import dataclass

from harness_kernel.topology.credentials import Secret


@dataclass(frozen=True)
class Credentials:
    """A login. The password is a `Secret`, so a repr or log line of this object never shows it."""

    username: str
    password: Secret | None = None


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int


@dataclass(frozen=True)
class ConnectionSettings:
    """Everything a dialect needs to build its connection string.

    Several endpoints mean a multi-host, failover-aware connection (psqlODBC Pqopt hosts);
    SQL Server takes one endpoint: the AG listener or FCI network name.
    """

    endpoints: tuple[Endpoint, ...]
    database: str
    credentials: Credentials
    login_timeout_s: int = 2
    statement_timeout_s: float = 5.0
    tcp_user_timeout_ms: int = 2000
    encrypt: bool = True
    trust_server_certificate: bool = False
    application_name: str = "resilience-harness"

    def __post_init__(self) -> None:
        if not self.endpoints:
            raise ValueError("ConnectionSettings needs at least one endpoint")
        if self.login_timeout_s <= 0 or self.statement_timeout_s <= 0:
            raise ValueError("login and statement timeouts must be positive: a workload must never hang")
