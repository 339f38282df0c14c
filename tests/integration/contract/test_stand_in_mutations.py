"""The mutation pass can tell a fact some contract test depends on from one none does.

(The whole pass, every fact of every stand-in, is `make mutations`; this runs two facts.)"""

from __future__ import annotations

from tests.support.mutations import StandIn, run_once


def test_serving_the_failover_events_from_another_log_fails_a_contract_test() -> None:
    outcome = run_once(StandIn("wsfc_model", ("tests/integration/contract/test_wsfc_backend.py",)), "event.1135.log")
    assert outcome.killed, outcome
    assert outcome.failed and all(name.startswith("tests/integration/contract/test_wsfc_backend.py::")
                                  for name in outcome.failed)


def test_a_fact_the_backend_no_longer_reads_survives_and_is_listed() -> None:
    """The backend reads the event time from the event's XML, never `timestamp_utc`: moving the version that
    has the column changes nothing a test sees."""
    outcome = run_once(StandIn("sqlserver_model", ("tests/integration/contract/test_sqlserver_backend.py",)),
                       "xe.timestamp_utc.since_major")
    assert not outcome.killed, outcome
