"""Resilience harness: run a database workload, inject infrastructure faults, measure the impact."""

__version__ = "0.1.0"
