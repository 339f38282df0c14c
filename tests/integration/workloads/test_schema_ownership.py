"""The OLTP schema is created only in a database the harness owns (safety finding #1, data loss).

`prepare_schema` drops and recreates five very common table names; it must never do that in
someone else's database. Checked against a real PostgreSQL: a database the harness did not
mark is refused, naming what it would have destroyed, and a database it marked (or one the
topology declares scratch) is prepared again and again.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from harness_kernel.errors import ConfigError
from tests.support.oltp_local import LocalBench
from workloads.oltp import prepare_schema
from workloads.oltp.schema import Scale

SMALL = Scale(branches=1, accounts_per_branch=100)
_names = itertools.count()


def new_database(pg: LocalBench) -> str:
    name = f"app{next(_names)}"
    pg.server.create_database(name)
    return name


def test_schema_is_refused_in_a_database_the_harness_does_not_own(pg: LocalBench) -> None:
    database = new_database(pg)
    pg.server.psql("CREATE TABLE accounts (id int); INSERT INTO accounts VALUES (42);"
                   "CREATE TABLE history (id int)", database=database)
    with pytest.raises(ConfigError) as refused:
        prepare_schema(pg.dialect, replace(pg.settings, database=database), SMALL)
    message = str(refused.value)
    assert database in message and "accounts" in message and "history" in message
    assert "tellers" not in message  # only what exists is named
    assert pg.server.psql("SELECT id FROM accounts", database=database).strip() == "42"  # untouched


def test_schema_is_refused_in_an_unmarked_database_unless_it_is_declared_scratch(pg: LocalBench) -> None:
    database = new_database(pg)
    with pytest.raises(ConfigError, match="database_is_scratch"):
        prepare_schema(pg.dialect, replace(pg.settings, database=database), SMALL)
    assert pg.server.psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", database=database).strip() == "0"


def test_a_database_the_harness_owns_is_prepared_again_without_the_scratch_opt_in(pg: LocalBench) -> None:
    database = new_database(pg)
    settings = replace(pg.settings, database=database)
    prepare_schema(pg.dialect, settings, SMALL, scratch=True)  # the first run marks it
    pg.server.psql("INSERT INTO ledger VALUES (7)", database=database)
    prepare_schema(pg.dialect, settings, SMALL)  # owned: recreated, the previous run's rows are gone
    assert pg.server.psql("SELECT count(*) FROM ledger", database=database).strip() == "0"
    assert pg.server.psql("SELECT count(*) FROM accounts", database=database).strip() == "100"
