"""The commit ledger: prove, after the run, which acknowledged commits survived.

Every write transaction inserts a row with a unique id, `user_id << 40 | seq`, in the same
transaction. A user remembers its acknowledged sequence numbers as ranges (one range per
uninterrupted run of commits) and lists failed or unknown-outcome ids explicitly, so memory
grows with users + errors, not with commits. `verify` reads the ledger back: an acknowledged
id that is missing is LOST; a failed id that is present committed despite the error (in
doubt, which is legal for an unknown outcome, and reported).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from workloads.base import LedgerReport
from workloads.oltp.dialect import Statements

SEQ_BITS = 40
MAX_SEQ = (1 << SEQ_BITS) - 1
MAX_LISTED = 1000  # LedgerReport.lost lists at most this many ids (and short_ranges this many ranges)
_IN_CHUNK = 500


def ledger_id(user_id: int, seq: int) -> int:
    return (user_id << SEQ_BITS) | seq


class LedgerBook:
    """One user's bookkeeping. Not thread-safe: each virtual user owns its book."""

    def __init__(self, user_id: int) -> None:
        if user_id < 0 or user_id >= 1 << (63 - SEQ_BITS):
            raise ValueError(f"user id {user_id} does not fit a ledger id")
        self.user_id = user_id
        self._next_seq = 0
        self.acked: list[list[int]] = []  # [first seq, end seq) runs, ascending
        self.failed: list[int] = []  # seqs whose transaction errored (rolled back or unknown)

    def next_id(self) -> int:
        seq = self._next_seq
        if seq > MAX_SEQ:
            raise OverflowError("ledger sequence exhausted for this user")
        self._next_seq += 1
        return ledger_id(self.user_id, seq)

    def acknowledge(self, ident: int) -> None:
        seq = ident & MAX_SEQ
        if self.acked and self.acked[-1][1] == seq:
            self.acked[-1][1] = seq + 1
        else:
            self.acked.append([seq, seq + 1])

    def fail(self, ident: int) -> None:
        self.failed.append(ident & MAX_SEQ)

    @property
    def acknowledged_count(self) -> int:
        return sum(end - first for first, end in self.acked)

    def acked_id_ranges(self) -> Iterator[tuple[int, int]]:
        """Inclusive (first id, last id) ranges of acknowledged ids."""
        for first, end in self.acked:
            yield ledger_id(self.user_id, first), ledger_id(self.user_id, end - 1)

    def failed_ids(self) -> list[int]:
        return [ledger_id(self.user_id, seq) for seq in self.failed]


def verify(cursor: Any, sql: Statements, books: Iterable[LedgerBook]) -> LedgerReport:
    """Read the ledger back: one COUNT per acknowledged range, ids listed only where short."""
    acknowledged = present = failed = 0
    lost: list[int] = []
    lost_count = 0
    failed_present: list[int] = []
    short_ranges: list[tuple[int, int, int, int]] = []
    for book in books:
        for first, last in book.acked_id_ranges():
            expected = last - first + 1
            acknowledged += expected
            found = int(cursor.execute(sql.ledger_count_range, first, last).fetchone()[0])
            present += found
            if found < expected:
                lost_count += expected - found
                if len(short_ranges) < MAX_LISTED:
                    short_ranges.append((book.user_id, first & MAX_SEQ, last & MAX_SEQ, expected - found))
                if len(lost) < MAX_LISTED:
                    lost.extend(_missing(cursor, sql, first, last)[: MAX_LISTED - len(lost)])
        ids = book.failed_ids()
        failed += len(ids)
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start:start + _IN_CHUNK]
            failed_present.extend(int(row[0]) for row in cursor.execute(sql.ledger_ids_in(len(chunk)), *chunk).fetchall())
    return LedgerReport(acknowledged, present, lost_count, failed, len(failed_present), lost, sorted(failed_present),
                        short_ranges)


def _missing(cursor: Any, sql: Statements, first: int, last: int) -> list[int]:
    rows = cursor.execute(sql.ledger_ids_range, first, last).fetchall()
    seen = {int(row[0]) for row in rows}
    return [ident for ident in range(first, last + 1) if ident not in seen]
