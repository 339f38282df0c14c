"""Ledger bookkeeping: acknowledged ids as ranges, failures listed, memory O(users + errors)."""

from __future__ import annotations

import pytest

from workloads.oltp.ledger import SEQ_BITS, LedgerBook, ledger_id


def test_ids_are_unique_per_user_and_carry_the_user_in_the_high_bits():
    a, b = LedgerBook(1), LedgerBook(2)
    ids = [a.next_id() for _ in range(3)] + [b.next_id() for _ in range(3)]
    assert len(set(ids)) == 6
    assert {i >> SEQ_BITS for i in ids} == {1, 2}


def test_an_uninterrupted_run_of_commits_is_one_range():
    book = LedgerBook(3)
    for _ in range(100_000):
        book.acknowledge(book.next_id())
    assert book.acked == [[0, 100_000]]
    assert book.acknowledged_count == 100_000


def test_a_failure_splits_the_range_and_is_listed_explicitly():
    book = LedgerBook(3)
    outcomes = [True, True, False, True, False, False, True]
    for ok in outcomes:
        ident = book.next_id()
        (book.acknowledge if ok else book.fail)(ident)
    assert book.acked == [[0, 2], [3, 4], [6, 7]]
    assert book.failed_ids() == [ledger_id(3, 2), ledger_id(3, 4), ledger_id(3, 5)]
    assert list(book.acked_id_ranges()) == [(ledger_id(3, 0), ledger_id(3, 1)), (ledger_id(3, 3), ledger_id(3, 3)),
                                            (ledger_id(3, 6), ledger_id(3, 6))]


def test_memory_grows_with_errors_not_with_commits():
    book = LedgerBook(1)
    for i in range(200_000):
        ident = book.next_id()
        if i % 50_000 == 49_999:
            book.fail(ident)
        else:
            book.acknowledge(ident)
    assert len(book.acked) == 4 and len(book.failed) == 4


def test_a_user_id_that_would_overflow_a_bigint_is_refused():
    with pytest.raises(ValueError, match="does not fit"):
        LedgerBook(1 << (63 - SEQ_BITS))
