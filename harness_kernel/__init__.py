"""The kernel every layer stands on: the history, the topology, ODBC settings, errors, paths, process helpers
and redaction. It imports nothing of the harness above it."""

__version__ = "0.1.0"
