"""OLTP workload: virtual users over pyodbc that survive failover and keep a commit ledger.

Entry points: `OltpDriver` (a `workloads.base.Workload`: start / stop / verify), `prepare_schema`, the dialects
`PostgresDialect` and `TSqlDialect`, the mixes `TPCB` and `TPCE_LIKE`.
"""

from harness_kernel.odbc.errors import ErrorClass, ErrorInfo, classify
from harness_kernel.odbc.settings import ConnectionSettings, Credentials, Endpoint
from workloads.base import LedgerReport, StopReport
from workloads.oltp.dialect import Dialect, PostgresDialect, TSqlDialect
from workloads.oltp.driver import DriverConfig, OltpDriver, OltpStopReport
from workloads.oltp.ledger import LedgerBook
from workloads.oltp.mix import MIXES, TPCB, TPCE_LIKE, Mix
from workloads.oltp.schema import prepare_schema

__all__ = [
    "MIXES", "TPCB", "TPCE_LIKE", "ConnectionSettings", "Credentials", "Dialect", "DriverConfig", "Endpoint",
    "ErrorClass", "ErrorInfo", "LedgerBook", "LedgerReport", "Mix", "OltpDriver", "OltpStopReport",
    "PostgresDialect", "StopReport", "TSqlDialect", "classify", "prepare_schema",
]
