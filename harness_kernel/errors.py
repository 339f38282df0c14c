"""Error classes that decide how a run is reported.

`HarnessError` and its children mean the harness or the infrastructure is broken (a pytest
*error*); an SLO violation is an `AssertionError` (a pytest *failure*). Reports and CI tell
the two apart by these classes.
"""

from __future__ import annotations


class HarnessError(Exception):
    """The harness or its infrastructure is broken; the product under test was not judged."""


class ConfigError(HarnessError):
    """Bad input: a topology, option or credential reference that cannot be used."""


class MissingCredentialError(ConfigError):
    """A credential reference points at nothing (unset variable, absent keyring entry)."""


class CredentialRejectedError(ConfigError):
    """A control plane answered and refused the login: the credential is wrong (bad input, exit 4)."""


class TargetNotAllowedError(ConfigError):
    """A destructive fault names a target the topology's allow-list does not contain."""


class TargetBusyError(HarnessError):
    """Another run holds the lock of the same topology."""


class RevertFailedError(HarnessError):
    """A fault could not be reverted: the target may still be broken."""


class ControlPlaneError(HarnessError):
    """A control plane (vCenter, BMC, router, lab) did not answer or refused an operation."""


class StopConditionTripped(AssertionError):
    """A guard stopped the experiment: the system left the envelope the test allows."""
