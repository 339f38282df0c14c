"""Error classification: what a failed transaction means for the run and for the user's next step.

pyodbc puts the SQLSTATE in `e.args[0]` and the driver's native error number at the end of
the message, as `... (NATIVE) (SQLFunctionName)`; several diagnostic records are joined by
`; `. The native number decides where the SQLSTATE is generic (SQL Server reports an AG
database that is not accessible as 42000 with native 976/983/4060).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum


class ErrorClass(StrEnum):
    CONNECTION_LOST = "connection-lost"
    TIMEOUT = "timeout"
    NOT_PRIMARY = "not-primary"  # read-only replica, AG database not accessible, demoted primary
    DEADLOCK_RETRY = "deadlock-retry"
    OTHER = "other"

    @property
    def needs_reconnect(self) -> bool:
        """After these the session is gone or points at the wrong node (or its state is unknown)."""
        return self in (ErrorClass.CONNECTION_LOST, ErrorClass.TIMEOUT, ErrorClass.NOT_PRIMARY)


SQLSTATE_CLASSES: Mapping[str, ErrorClass] = {
    "08S01": ErrorClass.CONNECTION_LOST,  # communication link failure
    "08001": ErrorClass.CONNECTION_LOST,  # unable to connect
    "08003": ErrorClass.CONNECTION_LOST,
    "08004": ErrorClass.CONNECTION_LOST,
    "08006": ErrorClass.CONNECTION_LOST,
    "08007": ErrorClass.CONNECTION_LOST,  # connection failure during transaction: outcome unknown
    "57P01": ErrorClass.CONNECTION_LOST,  # admin shutdown (PostgreSQL restart, failover)
    "57P02": ErrorClass.CONNECTION_LOST,  # crash shutdown
    "57P03": ErrorClass.CONNECTION_LOST,  # cannot connect now (starting up / recovering)
    "HYT00": ErrorClass.TIMEOUT,  # query or login timeout expired
    "HYT01": ErrorClass.TIMEOUT,  # connection timeout expired
    "57014": ErrorClass.TIMEOUT,  # PostgreSQL statement_timeout
    "25006": ErrorClass.NOT_PRIMARY,  # read-only transaction (standby, demoted primary)
    "40001": ErrorClass.DEADLOCK_RETRY,  # serialization failure / SQL Server deadlock victim
    "40P01": ErrorClass.DEADLOCK_RETRY,  # PostgreSQL deadlock detected
}

_NATIVE = re.compile(r"\((-?\d+)\)(?=\s*(?:\(SQL\w+\)|;|$))")


@dataclass(frozen=True)
class ErrorInfo:
    error_class: ErrorClass
    sqlstate: str | None
    native: int | None

    @property
    def code(self) -> str:
        """Compact label for series and reports, e.g. `08S01` or `42000/976`."""
        state = self.sqlstate or "?"
        return state if self.native is None else f"{state}/{self.native}"


def native_numbers(message: str) -> list[int]:
    return [int(n) for n in _NATIVE.findall(message)]


def classify(exc: BaseException, native_classes: Mapping[int, ErrorClass] | None = None) -> ErrorInfo:
    """Classify a pyodbc error; `native_classes` is the dialect's table of native error numbers."""
    args: tuple[object, ...] = tuple(getattr(exc, "args", ()))
    pyodbc_shaped = len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str)
    sqlstate = str(args[0]) if pyodbc_shaped else None
    message = str(args[1]) if pyodbc_shaped else str(exc)
    natives = native_numbers(message)
    table = native_classes or {}
    for number in natives:
        if number in table:
            return ErrorInfo(table[number], sqlstate, number)
    native = natives[0] if natives else None
    if sqlstate is not None and sqlstate in SQLSTATE_CLASSES:
        return ErrorInfo(SQLSTATE_CLASSES[sqlstate], sqlstate, native)
    if sqlstate is not None and sqlstate.startswith("08"):
        return ErrorInfo(ErrorClass.CONNECTION_LOST, sqlstate, native)
    return ErrorInfo(ErrorClass.OTHER, sqlstate, native)
