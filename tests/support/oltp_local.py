"""A throwaway local PostgreSQL with the OLTP schema loaded: for the driver's own tests and benchmarks."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from harness_kernel.topology.credentials import Secret
from tests.support.localpg import LocalPostgres
from workloads.oltp import ConnectionSettings, Credentials, Endpoint, PostgresDialect, prepare_schema
from workloads.oltp.schema import Scale

DATABASE = "bench"


@dataclass
class LocalBench:
    server: LocalPostgres
    dialect: PostgresDialect
    settings: ConnectionSettings
    scale: Scale


def start_bench(scale: Scale, max_connections: int = 100, **conf: str) -> LocalBench:
    password = Secret(secrets.token_urlsafe(16))
    server = LocalPostgres(password, max_connections=max_connections, extra_conf=dict(conf)).start()
    try:
        server.create_database(DATABASE)
        settings = ConnectionSettings((Endpoint(server.host, server.port),), DATABASE, Credentials("postgres", password))
        dialect = PostgresDialect()
        prepare_schema(dialect, settings, scale, scratch=True)  # created just above
    except BaseException:
        server.destroy()
        raise
    return LocalBench(server, dialect, settings, scale)
