"""The platforms, one folder each, every one in the shape a plug-in has.

A platform's folder holds its descriptor (`platform.py`: a `faults.contract.Platform`, found
through the `resilience_harness.platforms` entry point like a third party's), its topology
section's model, its client, its faults, its read-only probes and view, and its assumptions.
A platform imports `faults.contract` and its own folder, nothing else of the harness; nothing
of the harness imports a platform but by the `"module:Class"` strings of its descriptor.
"""
