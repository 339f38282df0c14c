"""Connection-string values cannot add attributes (safety finding #17, injection).

A topology value (endpoint, database, user, application name) goes into an ODBC connection
string, and for psqlODBC into the libpq conninfo inside `Pqopt={...}`. Each is checked here
by parsing the rendered string back the way the drivers do (ODBC: `;` separated, `{...}`
quoted with `}}` for `}`; libpq: whitespace separated, `'...'` quoted with backslash escapes)
and comparing the attributes with the ones the dialect meant to set.
"""

from __future__ import annotations

import pytest

from harness_kernel.errors import ConfigError
from harness_kernel.topology.credentials import Secret
from workloads.oltp import ConnectionSettings, Credentials, Endpoint, PostgresDialect, TSqlDialect

INJECTION = "sqlag01-listener;Encrypt=no;TrustServerCertificate=yes"


def parse_odbc(text: str) -> list[tuple[str, str]]:
    """ODBC connection-string grammar, as psqlODBC, FreeTDS and Driver 18 read it."""
    pairs, i = [], 0
    while i < len(text):
        equals = text.index("=", i)
        key, i = text[i:equals], equals + 1
        if text.startswith("{", i):
            value, i = "", i + 1
            while True:
                close = text.index("}", i)
                value += text[i:close]
                if text.startswith("}}", close):
                    value, i = value + "}", close + 2
                    continue
                i = close + 1
                break
            assert i == len(text) or text[i] == ";", f"text after a closing brace: {text[i:]!r}"
        else:
            end = text.find(";", i)
            end = len(text) if end < 0 else end
            value, i = text[i:end], end
        pairs.append((key, value))
        i += 1
    return pairs


def parse_libpq(text: str) -> dict[str, str]:
    """libpq's conninfo grammar (PQconninfoParse): key=value, values quoted with '...' and \\ escapes."""
    out, i = {}, 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            return out
        equals = text.index("=", i)
        key, i = text[i:equals].strip(), equals + 1
        value = ""
        if text.startswith("'", i):
            i += 1
            while text[i] != "'":
                if text[i] == "\\":
                    i += 1
                value, i = value + text[i], i + 1
            i += 1
        else:
            while i < len(text) and not text[i].isspace():
                if text[i] == "\\":
                    i += 1
                value, i = value + text[i], i + 1
        assert key not in out, f"{key} given twice"
        out[key] = value


def settings(*endpoints: Endpoint, database: str = "bench", user: str = "app", **kw: object) -> ConnectionSettings:
    return ConnectionSettings(endpoints, database, Credentials(user, Secret("pw")), **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("driver", ["odbc18", "freetds"])
def test_a_tsql_endpoint_cannot_add_connection_attributes(driver: str) -> None:
    dialect = TSqlDialect(driver=driver)  # type: ignore[arg-type]
    pairs = parse_odbc(dialect.connection_string(settings(Endpoint(INJECTION, 1433))))
    keys = [key.upper() for key, _ in pairs]
    assert keys == [key.upper() for key, _ in parse_odbc(dialect.connection_string(settings(Endpoint("listener", 1433))))]
    assert INJECTION in dict(pairs)["SERVER"]
    if driver == "odbc18":
        assert dict(pairs)["Encrypt"] == "yes" and dict(pairs)["TrustServerCertificate"] == "no"


@pytest.mark.parametrize("dialect", [PostgresDialect(), TSqlDialect(), TSqlDialect(driver="freetds")], ids=lambda d: d.driver)
def test_every_odbc_value_is_brace_quoted_with_closing_braces_doubled(dialect: PostgresDialect | TSqlDialect) -> None:
    evil = "x};Encrypt=no;{y"
    s = settings(Endpoint("127.0.0.1", 1433), database=evil, user=evil, application_name="app")
    pairs = parse_odbc(dialect.connection_string(s))
    plain = parse_odbc(dialect.connection_string(settings(Endpoint("127.0.0.1", 1433))))
    assert [key for key, _ in pairs] == [key for key, _ in plain]
    values = {key.upper(): value for key, value in pairs}
    assert values["DATABASE"] == evil and values["UID"] == evil


@pytest.mark.parametrize("host", ["db port=1 sslmode=disable", "db=x", "db,evil", "db'", "db\\", "db}x", "db\tx", ""])
def test_a_pqopt_host_libpq_would_read_as_more_than_one_host_is_refused(host: str) -> None:
    with pytest.raises(ConfigError, match="host"):
        PostgresDialect().connection_string(settings(Endpoint(host, 5432)))


def test_a_pqopt_application_name_cannot_add_libpq_options() -> None:
    name = "app' sslmode=disable host=evil } \\"
    pairs = dict(parse_odbc(PostgresDialect().connection_string(settings(Endpoint("127.0.0.1", 5432),
                                                                         application_name=name))))
    options = parse_libpq(pairs["Pqopt"])
    assert options["application_name"] == name
    assert options["host"] == "127.0.0.1" and "sslmode" not in options


@pytest.mark.parametrize("dialect", [PostgresDialect(), TSqlDialect()], ids=lambda d: d.name)
@pytest.mark.parametrize("field", ["database", "user", "host", "password"])
def test_a_nul_character_is_refused_in_any_value_without_echoing_it(dialect: PostgresDialect | TSqlDialect,
                                                                     field: str) -> None:
    value = "secr\x00et"
    s = ConnectionSettings((Endpoint(value if field == "host" else "db", 1433),), value if field == "database" else "bench",
                           Credentials(value if field == "user" else "app", Secret(value if field == "password" else "pw")))
    with pytest.raises(ConfigError) as refused:
        dialect.connection_string(s)
    assert "secr" not in str(refused.value)
