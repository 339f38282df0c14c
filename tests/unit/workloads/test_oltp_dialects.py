"""Connection strings and SQL each dialect emits.

No SQL Server runs here: the T-SQL profile is checked for the text it emits (connection
string, session setup, schema, transactions), not executed.
"""

from __future__ import annotations

from harness_kernel.topology.credentials import Secret
from workloads.oltp import ConnectionSettings, Credentials, Endpoint, PostgresDialect, TSqlDialect
from workloads.oltp.mix import TPCB_STEPS
from workloads.oltp.schema import Scale, marker_statements, ownership_problem, schema_statements

PASSWORD = "s3cr;et}pw"


def settings(*endpoints: Endpoint, **kw: object) -> ConnectionSettings:
    return ConnectionSettings(endpoints, "bench", Credentials("app", Secret(PASSWORD)), **kw)  # type: ignore[arg-type]


def test_settings_and_credentials_never_show_the_password_in_their_repr():
    s = settings(Endpoint("db", 1433))
    assert PASSWORD not in repr(s)
    assert PASSWORD not in str(s.credentials)


def test_postgres_connects_multi_host_read_write_with_fast_dead_peer_detection():
    conn = PostgresDialect().connection_string(
        settings(Endpoint("198.18.0.1", 5432), Endpoint("198.18.0.9", 5433), login_timeout_s=3))
    assert "Protocol=7.4-1;UseServerSidePrepare=0;LoginTimeout=3;" in conn
    pqopt = conn.split("Pqopt={", 1)[1]
    assert pqopt.startswith("host=198.18.0.1,198.18.0.9 port=5432,5433 target_session_attrs=read-write tcp_user_timeout=2000 "
                            "keepalives_idle=1 keepalives_interval=1 keepalives_count=2")
    # psqlODBC rejects port / connect_timeout given both inside Pqopt and as options (error 202)
    assert "connect_timeout" not in conn
    assert ";Port=" not in conn and ";port=" not in conn


def test_a_password_with_separators_is_brace_quoted_and_redacted_for_logs():
    dialect, s = PostgresDialect(), settings(Endpoint("127.0.0.1", 5432))
    assert "Pwd={s3cr;et}}pw};" in dialect.connection_string(s)
    redacted = dialect.redacted_connection_string(s)
    assert "Pwd=***;" in redacted
    assert "s3cr" not in redacted


def test_odbc18_uses_multi_subnet_failover_and_explicit_encryption():
    conn = TSqlDialect().connection_string(settings(Endpoint("ag-listener.corp", 1433), trust_server_certificate=True))
    assert conn.startswith("DRIVER={ODBC Driver 18 for SQL Server};SERVER=tcp:ag-listener.corp,1433;DATABASE=bench;UID=app;PWD=")
    assert ";MultiSubnetFailover=Yes;Encrypt=yes;TrustServerCertificate=yes;" in conn


def test_freetds_has_no_multi_subnet_failover():
    conn = TSqlDialect(driver="freetds").connection_string(settings(Endpoint("ag-listener.corp", 1433)))
    assert conn.startswith("DRIVER={FreeTDS};SERVER=ag-listener.corp;DATABASE=bench;UID=app;PWD=")
    assert "MultiSubnetFailover" not in conn
    assert ";PORT=1433;TDS_Version=7.4;Encryption=require;" in conn


def test_tsql_session_bounds_lock_waits_and_aborts_on_error():
    assert TSqlDialect().session_setup(settings(Endpoint("l", 1433), statement_timeout_s=2.5)) == [
        "SET NOCOUNT ON", "SET XACT_ABORT ON", "SET LOCK_TIMEOUT 2500"]


def test_tsql_writes_history_and_ledger_in_one_batch_with_parameters_in_step_order():
    sql = TSqlDialect().statements.insert_history_and_ledger
    assert sql == ("INSERT INTO ledger (id) VALUES (?); "
                   "INSERT INTO history (tid, bid, aid, delta, mtime) VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP)")
    assert dict(TPCB_STEPS)["insert_history_and_ledger"] == ("ledger_id", "tid", "bid", "aid", "delta")


def test_every_tpcb_step_has_as_many_markers_as_parameters_in_both_dialects():
    for dialect in (PostgresDialect(), TSqlDialect()):
        for statement, names in TPCB_STEPS:
            assert getattr(dialect.statements, statement).count("?") == len(names), (dialect.name, statement)


def test_tsql_schema_uses_datetime2_and_a_row_number_generator():
    statements = schema_statements(TSqlDialect(), Scale(branches=2))
    assert "CREATE TABLE history (tid int, bid int, aid int, delta int, mtime datetime2, filler char(22))" in statements
    accounts = statements[-1]
    assert accounts.startswith("INSERT INTO accounts (aid, bid, abalance) SELECT n, (n - 1) / 100000 + 1, 0 "
                               "FROM (SELECT TOP (200000) ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) AS n FROM sys.all_objects")
    assert "generate_series" not in " ".join(statements)


def test_each_dialect_asks_which_schema_tables_exist_where_an_unqualified_drop_would_find_them():
    names = ("history", "resilience_harness_owner")
    assert PostgresDialect().existing_tables(names) == (
        "SELECT v.name FROM (VALUES ('history'), ('resilience_harness_owner')) AS v(name) WHERE to_regclass(v.name) IS NOT NULL")
    assert TSqlDialect().existing_tables(names) == (
        "SELECT v.name FROM (VALUES ('history'), ('resilience_harness_owner')) AS v(name) WHERE OBJECT_ID(v.name) IS NOT NULL")


def test_the_ownership_marker_uses_each_dialects_timestamp_type():
    assert marker_statements(TSqlDialect())[0] == (
        "CREATE TABLE resilience_harness_owner (created_by varchar(64) NOT NULL, created_at datetime2 NOT NULL)")
    assert "created_at timestamp NOT NULL" in marker_statements(PostgresDialect())[0]


def test_schema_is_refused_without_the_marker_unless_scratch_and_names_only_the_tables_that_exist():
    refused = ownership_problem("prod", ["accounts", "history"], scratch=False)
    assert refused is not None and "'prod'" in refused and "history, accounts" in refused and "tellers" not in refused
    assert "database_is_scratch" in (ownership_problem("fresh", [], scratch=False) or "")
    assert ownership_problem("owned", ["accounts", "resilience_harness_owner"], scratch=False) is None
    assert ownership_problem("fresh", [], scratch=True) is None
