"""Escaped connection-string values through the real stack (unixODBC, psqlODBC, libpq, PostgreSQL).

The unit tests parse the rendered string with the ODBC and libpq grammars; this checks that the
drivers read it the same way: a password and an application name full of separators, braces
and quotes arrive at the server unchanged.
"""

from __future__ import annotations

from dataclasses import replace

from harness_kernel.topology.credentials import Secret
from tests.support.oltp_local import LocalBench
from workloads.oltp import Credentials
from workloads.oltp.connect import close_quietly, connect

PASSWORD = "p};w=x{'y z"
APPLICATION = "app'; Encrypt=no} \\x"


def test_a_password_and_an_application_name_full_of_separators_reach_the_server_unchanged(pg: LocalBench) -> None:
    literal = PASSWORD.replace("'", "''")
    pg.server.psql(f"CREATE ROLE odd_login LOGIN PASSWORD '{literal}'")
    settings = replace(pg.settings, credentials=Credentials("odd_login", Secret(PASSWORD)), application_name=APPLICATION)
    connection = connect(pg.dialect, settings)
    try:
        row = connection.cursor().execute("SELECT current_user, current_setting('application_name')").fetchone()
        connection.rollback()
    finally:
        close_quietly(connection)
    assert tuple(row) == ("odd_login", APPLICATION)
