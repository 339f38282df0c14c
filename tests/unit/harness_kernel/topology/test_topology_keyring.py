"""Rule 4: a keyring lookup is bounded in time (safety.md #20): a locked Secret Service on a
headless box must not hang pytest_configure or a dry run."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import keyring
import pytest

from harness_kernel.errors import MissingCredentialError
from harness_kernel.topology import credentials
from harness_kernel.topology.credentials import KeyringRef, SecretRef, resolve_secret


@pytest.fixture
def locked_keyring(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A keyring that answers only after 3 s, and a 0.2 s timeout; abandoned lookups are ended after."""
    release = threading.Event()

    def locked(service: str, username: str) -> str:
        release.wait(3)
        return "found-too-late"

    monkeypatch.setattr(keyring, "get_password", locked)
    monkeypatch.setattr(credentials, "KEYRING_TIMEOUT_S", 0.2, raising=False)
    yield
    release.set()
    for thread in threading.enumerate():
        if thread.name == "keyring-lookup":
            thread.join(5)


def test_a_keyring_lookup_that_hangs_times_out_naming_the_field(locked_keyring: None) -> None:
    ref = SecretRef(keyring=KeyringRef(service="resilience-harness", username="bmc-esx-a1"))
    started = time.monotonic()
    with pytest.raises(MissingCredentialError,
                       match=r"^management\.redfish\[0\]\.credential\.password: keyring lookup "
                             r"of management\.redfish\[0\]\.credential\.password\.keyring timed out after 0\.2 s"):
        resolve_secret(ref, "management.redfish[0].credential.password")
    assert time.monotonic() - started < 2


def test_while_a_lookup_is_blocked_the_next_ones_fail_at_once(locked_keyring: None) -> None:
    refs = [(f"management.redfish[{i}].credential.password", SecretRef(keyring=KeyringRef(service="s", username=f"u{i}")))
            for i in range(5)]
    started = time.monotonic()
    missing = credentials.missing_secrets(refs)
    assert time.monotonic() - started < 1.5
    assert len(missing) == 5 and all("timed out" in line for line in missing)


def test_a_keyring_lookup_that_answers_in_time_returns_the_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keyring, "get_password", lambda service, username: f"pw-{service}-{username}")
    secret = resolve_secret(SecretRef(keyring=KeyringRef(service="s", username="u")), "x")
    assert secret.reveal() == "pw-s-u"
