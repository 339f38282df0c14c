"""Credential references and their resolution.

A topology names *where* a secret lives (an environment variable or a keyring entry), never
the secret. Resolved values are wrapped in `Secret` so that a repr, a log line or a journal
entry cannot print them by accident. Masking them in output is harness_kernel.redaction's job.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict, model_validator

from harness_kernel.errors import MissingCredentialError

KEYRING_TIMEOUT_S = 10.0
_blocked_lookup: threading.Thread | None = None


class Secret:
    """A resolved secret. `str()` and `repr()` never show the value; `reveal()` does."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__


class KeyringRef(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    service: str
    username: str


class SecretRef(BaseModel):
    """Where a secret lives: exactly one of `env` (variable name) or `keyring`."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    env: str | None = None
    keyring: KeyringRef | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> SecretRef:
        if (self.env is None) == (self.keyring is None):
            raise ValueError("give exactly one of 'env' (variable name) or 'keyring' {service, username}")
        return self

    def describe(self) -> str:
        if self.env is not None:
            return f"env:{self.env}"
        assert self.keyring is not None
        return f"keyring:{self.keyring.service}/{self.keyring.username}"


class CredentialRef(BaseModel):
    """A username (not secret) and a reference to its password or key passphrase."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    username: str
    password: SecretRef


def resolve_secret(ref: SecretRef, field_path: str, environ: Mapping[str, str] | None = None) -> Secret:
    """Look the secret up now; the error names the topology field and the reference."""
    env = os.environ if environ is None else environ
    if ref.env is not None:
        value = env.get(ref.env)
        if not value:
            raise MissingCredentialError(f"{field_path}: the environment variable named at {field_path}.env is not set")
        return Secret(value)
    assert ref.keyring is not None
    try:
        value = _keyring_password(ref.keyring.service, ref.keyring.username, KEYRING_TIMEOUT_S)
    except TimeoutError:
        raise MissingCredentialError(f"{field_path}: keyring lookup of {field_path}.keyring timed out after "
                                     f"{KEYRING_TIMEOUT_S:g} s (a locked or unreachable keyring?)") from None
    except Exception as exc:  # keyring backends raise many things; all mean "not available"
        raise MissingCredentialError(f"{field_path}: keyring lookup of {field_path}.keyring failed: "
                                     f"{type(exc).__name__}") from None
    if not value:
        raise MissingCredentialError(f"{field_path}: the keyring has no entry for {field_path}.keyring")
    return Secret(value)


def _keyring_password(service: str, username: str, timeout_s: float) -> str | None:
    """`keyring.get_password`, bounded: a locked Secret Service on a headless box blocks forever.

    The lookup runs in a daemon thread; on timeout it is abandoned (it cannot be cancelled)
    and never keeps the process from exiting. While an abandoned lookup is still blocked, the
    next ones fail at once rather than wait the timeout again (a dry run checks every reference).
    """
    import keyring

    global _blocked_lookup
    if _blocked_lookup is not None and _blocked_lookup.is_alive():
        raise TimeoutError("an earlier keyring lookup is still blocked")
    outcome: list[str | BaseException | None] = []

    def lookup() -> None:
        try:
            outcome.append(keyring.get_password(service, username))
        except BaseException as exc:  # handed to the caller's thread
            outcome.append(exc)

    worker = threading.Thread(target=lookup, name="keyring-lookup", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if not outcome:
        _blocked_lookup = worker
        raise TimeoutError(f"keyring lookup took more than {timeout_s} s")
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result


def missing_secrets(refs: Iterable[tuple[str, SecretRef]], environ: Mapping[str, str] | None = None, *,
                    open_keyring: bool = True) -> list[str]:
    """The references that would fail to resolve, as 'field: reason' lines (for dry-run).

    Without `open_keyring` a keyring reference is listed as not looked up: opening the keyring
    loads its backends, which probe the machine (they run `ldconfig` and a compiler from $PATH to
    find libraries), and a dry-run runs nothing."""
    missing = []
    for path, ref in refs:
        if ref.keyring is not None and not open_keyring:
            missing.append(f"{path}: a keyring reference, not looked up by a dry-run (a real run opens the keyring)")
            continue
        try:
            resolve_secret(ref, path, environ)
        except MissingCredentialError as exc:
            missing.append(str(exc))
    return missing
