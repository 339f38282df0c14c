"""A keeper setting is applied even when pg_autoctl is rewriting its configuration file at that moment.

`config set` makes a running keeper reload, and the keeper writes its file again; the next `config set`
can read it half written ("Failed to parse configuration file", seen in a fresh `make test`). That read is
tried again, a bounded number of times; any other failure is raised at once.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from harness_kernel.errors import ControlPlaneError
from harness_kernel.topology.models import LabSettings
from harness_lab.layout import LabLayout
from harness_lab.postgres import PgCluster
from harness_lab.services import Services

HALF_WRITTEN = ('failed (12): pg_autoctl config set ...\n'
                '07:49:55 32328 ERROR Failed to find section pg_autoctl in "/x/pg_autoctl.cfg"\n'
                '07:49:55 32328 ERROR Failed to parse configuration file "/x/pg_autoctl.cfg"\n'
                '07:49:55 32328 FATAL Unrecognized configuration file "/x/pg_autoctl.cfg"')


class Autoctl:
    """pg_autoctl as the keeper's race shows it: the first `failures` calls find the file half written."""

    def __init__(self, failures: int, message: str = HALF_WRITTEN) -> None:
        self.failures, self.message, self.calls = failures, message, 0

    def __call__(self, name: str, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        self.calls += 1
        if self.calls <= self.failures:
            raise ControlPlaneError(self.message)
        return subprocess.CompletedProcess(["pg_autoctl", *args], 0, "", "")


def cluster(tmp_path: Path, autoctl: Autoctl, monkeypatch: pytest.MonkeyPatch) -> PgCluster:
    pg = PgCluster(LabLayout.from_settings(LabSettings(prefix="hkst", state_dir=str(tmp_path / "lab"))),
                   Services(tmp_path / "pids"))
    monkeypatch.setattr(PgCluster, "_autoctl", lambda self, *a, **k: autoctl(*a, **k))
    monkeypatch.setattr(time, "sleep", lambda s: None)
    return pg


def test_a_configuration_file_read_half_written_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    autoctl = Autoctl(failures=2)
    cluster(tmp_path, autoctl, monkeypatch).set_keeper_setting("node-a", "timeout.network_partition_timeout", "20")
    assert autoctl.calls == 3


def test_it_is_read_again_a_bounded_number_of_times(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    autoctl = Autoctl(failures=100)
    with pytest.raises(ControlPlaneError, match="Failed to parse configuration file"):
        cluster(tmp_path, autoctl, monkeypatch).set_keeper_setting("node-a", "k", "v")
    assert autoctl.calls == 5


@pytest.mark.parametrize("message", ["failed (1): pg_autoctl: unknown setting k", "timed out after 30 s: pg_autoctl"])
def test_any_other_failure_is_raised_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, message: str) -> None:
    autoctl = Autoctl(failures=1, message=message)
    with pytest.raises(ControlPlaneError, match=re.escape(message)):
        cluster(tmp_path, autoctl, monkeypatch).set_keeper_setting("node-a", "k", "v")
    assert autoctl.calls == 1
