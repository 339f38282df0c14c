"""Resilience harness: run a database workload, inject infrastructure faults, measure the impact."""

from harness_kernel import __version__

__all__ = ["__version__"]
