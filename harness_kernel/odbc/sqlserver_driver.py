"""SQL Server over ODBC: the connection attributes of ODBC Driver 18 and FreeTDS, and its error numbers.

ODBC Driver 18 (`DRIVER={ODBC Driver 18 for SQL Server};SERVER=tcp:HOST,PORT;...`, Microsoft's
"DSN and connection string keywords and attributes"): `MultiSubnetFailover=Yes` so a client
tries every address of an AG listener or multi-subnet FCI at once, `Encrypt` and
`TrustServerCertificate` as the topology says (Driver 18 encrypts by default and verifies the
certificate unless told otherwise). The login timeout is pyodbc's `timeout=` argument and the
query timeout `connection.timeout`, not attributes of the string. FreeTDS (Debian `tdsodbc`)
has no MultiSubnetFailover: it tries the listener's first address only, so a multi-subnet AG
should use Driver 18; its `Encryption=require|off` stands for Encrypt.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from harness_kernel.odbc.errors import ErrorClass
from harness_kernel.odbc.grammar import odbc_value, refuse_nul_in, with_password
from harness_kernel.odbc.settings import ConnectionSettings

Driver = Literal["odbc18", "freetds"]
PASSWORD_KEY = "PWD"
# the topology's `odbc_driver` -> the driver profile
DRIVERS: Mapping[str, Driver] = {"ODBC Driver 18 for SQL Server": "odbc18", "FreeTDS": "freetds"}

# Native error numbers (sys.messages) that decide over a generic SQLSTATE such as 42000.
NATIVE_CLASSES: Mapping[int, ErrorClass] = {
    976: ErrorClass.NOT_PRIMARY,  # AG database not accessible on this replica
    978: ErrorClass.NOT_PRIMARY,  # read-intent only replica
    983: ErrorClass.NOT_PRIMARY,  # replica neither PRIMARY nor SECONDARY (resolving)
    4060: ErrorClass.NOT_PRIMARY,  # cannot open database (not online on this node yet)
    3906: ErrorClass.NOT_PRIMARY,  # database is read-only
    1205: ErrorClass.DEADLOCK_RETRY,  # deadlock victim
    3960: ErrorClass.DEADLOCK_RETRY,  # snapshot isolation update conflict
    1222: ErrorClass.TIMEOUT,  # lock request timeout
    10053: ErrorClass.CONNECTION_LOST,
    10054: ErrorClass.CONNECTION_LOST,  # connection reset by peer
    10060: ErrorClass.CONNECTION_LOST,
    10061: ErrorClass.CONNECTION_LOST,  # connection refused
    233: ErrorClass.CONNECTION_LOST,  # no process on the other end of the pipe
    64: ErrorClass.CONNECTION_LOST,  # specified network name no longer available
}


def connection_pairs(settings: ConnectionSettings, driver: Driver = "odbc18",
                     tds_version: str = "7.4") -> list[tuple[str, str]]:
    """The attributes without the password, for one endpoint: the AG listener, FCI network name or one replica."""
    if len(settings.endpoints) != 1:
        raise ValueError("SQL Server takes one endpoint (the AG listener, FCI network name or one replica)")
    endpoint = settings.endpoints[0]
    database, user = odbc_value(settings.database), odbc_value(settings.credentials.username)
    if driver == "freetds":
        return [("DRIVER", "{FreeTDS}"), ("SERVER", odbc_value(endpoint.host)), ("DATABASE", database), ("UID", user),
                ("PORT", str(int(endpoint.port))), ("TDS_Version", odbc_value(tds_version)),
                ("Encryption", "require" if settings.encrypt else "off"), ("ClientCharset", "UTF-8"),
                ("APP", odbc_value(settings.application_name))]
    yes_no = {True: "yes", False: "no"}
    server = odbc_value(f"tcp:{endpoint.host},{int(endpoint.port)}")
    return [("DRIVER", "{ODBC Driver 18 for SQL Server}"), ("SERVER", server), ("DATABASE", database), ("UID", user),
            ("MultiSubnetFailover", "Yes"),
            ("Encrypt", yes_no[settings.encrypt]),
            ("TrustServerCertificate", yes_no[settings.trust_server_certificate]),
            ("APP", odbc_value(settings.application_name))]


def connection_string(settings: ConnectionSettings, driver: Driver = "odbc18", *, shown: str | None = None) -> str:
    """The full string, password included unless `shown` replaces it: pass it to the driver, never to a log."""
    refuse_nul_in(settings)
    return with_password(connection_pairs(settings, driver), PASSWORD_KEY, settings, shown)
