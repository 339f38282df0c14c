"""The history: the one contract between roles.

Workloads, faults and cluster watchers write events (`EventKind`) on the `Timeline` and
samples into series (`TransactionSeries`, `MetricSeries`); analysis and reports read only
these. Nothing here knows who wrote what.
"""

from harness_kernel.history.events import EventKind
from harness_kernel.history.series import MetricSeries, SecondPoint, TransactionSeries
from harness_kernel.history.timeline import Event, Timeline

__all__ = ["Event", "EventKind", "MetricSeries", "SecondPoint", "Timeline", "TransactionSeries"]
