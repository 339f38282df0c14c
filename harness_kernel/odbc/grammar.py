"""The ODBC connection-string grammar, as psqlODBC, FreeTDS and ODBC Driver 18 read it.

Every value that reaches a connection string is escaped (`{...}` with `}` doubled), so a
topology value can never add an attribute such as `Encrypt=no`. What no grammar can carry (a
NUL) is refused with a `ConfigError` that does not echo it. The password goes only into the
string handed to the driver; the redacted form is the one a log may show.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness_kernel.errors import ConfigError
from harness_kernel.odbc.settings import ConnectionSettings

REDACTED = "***"


def refuse_nul(value: str, what: str) -> str:
    if "\x00" in value:
        raise ConfigError(f"{what} contains a NUL character, which no connection string can carry")
    return value


def odbc_value(value: str, what: str = "a connection-string value") -> str:
    """An ODBC attribute value, brace-quoted (with `}` doubled) when it holds a separator or brace."""
    refuse_nul(value, what)
    if any(c in value for c in ";{}=") or value != value.strip():
        return odbc_braced(value, what)
    return value


def odbc_braced(value: str, what: str = "a connection-string value") -> str:
    """An ODBC attribute value always in braces, `}` doubled (psqlODBC, FreeTDS and Driver 18 read `}}` as `}`)."""
    return "{" + refuse_nul(value, what).replace("}", "}}") + "}"


def render(pairs: Sequence[tuple[str, str]]) -> str:
    return ";".join(f"{key}={value}" for key, value in pairs)


def with_password(pairs: Sequence[tuple[str, str]], password_key: str, settings: ConnectionSettings,
                  shown: str | None = None) -> str:
    """The rendered string with the password right after the user name (`shown` in its place for a log)."""
    refuse_nul_in(settings)
    attributes = list(pairs)
    secret = settings.credentials.password
    if secret is not None:
        after_user = next(i for i, (key, _) in enumerate(attributes) if key.lower() == "uid") + 1
        value = shown if shown is not None else odbc_value(secret.reveal(), "the password")
        attributes.insert(after_user, (password_key, value))
    return render(attributes)


def refuse_nul_in(settings: ConnectionSettings) -> None:
    """Before any value is parsed further: an error about a value must never echo a NUL-bearing secret."""
    for what, value in _texts(settings):
        refuse_nul(value, what)


def _texts(settings: ConnectionSettings) -> list[tuple[str, str]]:
    """Every free-text value of the settings, named for an error message."""
    secret = settings.credentials.password
    return [*(("an endpoint host", e.host) for e in settings.endpoints), ("the database name", settings.database),
            ("the user name", settings.credentials.username), ("the application name", settings.application_name),
            *([("the password", secret.reveal())] if secret is not None else [])]
