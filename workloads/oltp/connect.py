"""Opening one session: connection string from the dialect, timeouts, session setup."""

from __future__ import annotations

import contextlib
from typing import Any

import pyodbc

from harness_kernel.odbc.settings import ConnectionSettings
from workloads.oltp.dialect import Dialect


def connect(dialect: Dialect, settings: ConnectionSettings) -> Any:
    """A new pyodbc connection in manual-commit mode, with login and statement timeouts set.

    Errors are pyodbc's own; their text never contains the connection string.
    """
    raw = pyodbc.connect(dialect.connection_string(settings), autocommit=False, timeout=settings.login_timeout_s)
    connection = dialect.bounded(raw, settings)
    try:
        dialect.configure(connection, settings)
        cursor = connection.cursor()
        for statement in dialect.session_setup(settings):
            cursor.execute(statement)
        connection.commit()
    except BaseException:
        close_quietly(connection)
        raise
    return connection


def close_quietly(connection: Any) -> None:
    """Close a connection that may already be broken; its errors mean nothing any more."""
    with contextlib.suppress(pyodbc.Error):
        connection.close()
