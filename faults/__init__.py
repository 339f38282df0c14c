"""The nemesis: faults that inject, check and revert one failure on one target."""

from faults.base import Fault, FaultPlan, FaultSpec, FaultState

__all__ = ["Fault", "FaultPlan", "FaultSpec", "FaultState"]
