"""A virtual user keeps one cursor per SQL text, so pyodbc prepares each statement once per connection."""

from __future__ import annotations

import random
from typing import Any

from workloads.oltp.dialect import PostgresDialect
from workloads.oltp.mix import TPCB_STEPS, tpcb
from workloads.oltp.schema import Scale
from workloads.oltp.user import PreparedCursors


class RecordingCursor:
    """Counts what pyodbc would do: a prepare whenever the text differs from the cursor's last."""

    def __init__(self) -> None:
        self.last_sql: str | None = None
        self.prepares = 0
        self.executions: list[tuple[str, tuple[Any, ...]]] = []

    def execute(self, sql: str, *parameters: Any) -> RecordingCursor:
        if sql != self.last_sql:
            self.prepares += 1
            self.last_sql = sql
        self.executions.append((sql, parameters))
        return self

    def fetchall(self) -> list[tuple[int]]:
        return [(0,)]


class RecordingConnection:
    def __init__(self) -> None:
        self.cursors: list[RecordingCursor] = []

    def cursor(self) -> RecordingCursor:
        self.cursors.append(RecordingCursor())
        return self.cursors[-1]


def test_a_tpcb_transaction_prepares_each_of_its_statements_once_per_connection() -> None:
    connection = RecordingConnection()
    cursors = PreparedCursors(connection)
    rng = random.Random(7)
    for ledger_id in range(100):
        tpcb(cursors.execute, PostgresDialect.statements, rng, Scale(10), ledger_id)
    assert len(connection.cursors) == len(TPCB_STEPS)
    assert [c.prepares for c in connection.cursors] == [1] * len(TPCB_STEPS)
    assert all(len(c.executions) == 100 for c in connection.cursors)


def test_the_transaction_binds_the_parameters_its_steps_name_in_order() -> None:
    connection = RecordingConnection()
    tpcb(PreparedCursors(connection).execute, PostgresDialect.statements, random.Random(3), Scale(10), 42)
    by_statement = {sql: parameters for c in connection.cursors for sql, parameters in c.executions}
    statements = PostgresDialect.statements
    history = by_statement[statements.insert_history_and_ledger]
    ledger_id, tid, bid, aid, delta = history
    assert ledger_id == 42
    assert by_statement[statements.update_account] == (delta, aid)
    assert by_statement[statements.select_account] == (aid,)
    assert by_statement[statements.update_teller] == (delta, tid)
    assert by_statement[statements.update_branch] == (delta, bid)
    scale = Scale(10)
    assert 1 <= aid <= scale.accounts and 1 <= bid <= scale.branches and 1 <= tid <= scale.tellers
    assert -5000 <= delta <= 5000
