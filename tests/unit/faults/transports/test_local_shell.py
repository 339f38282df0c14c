"""The local shell runs commands here (in a namespace when asked), bounded in time, status returned."""

from __future__ import annotations

import pytest

from faults.transports.shell import LocalShell
from harness_kernel.errors import ConfigError, ControlPlaneError


def test_the_exit_status_and_output_are_returned_not_raised() -> None:
    shell = LocalShell()
    done = shell.run("echo out; echo err >&2; exit 3")
    assert (done.status, done.stdout, done.stderr) == (3, "out\n", "err\n")
    assert shell.run("cat", input_text="fed on stdin").stdout == "fed on stdin"


def test_check_raises_with_the_command_and_its_stderr() -> None:
    with pytest.raises(ControlPlaneError, match=r"`ls /nonexistent-dir` failed \(2\): .*No such file"):
        LocalShell().check("ls /nonexistent-dir")


def test_a_command_that_does_not_end_is_cut_off_at_its_timeout() -> None:
    with pytest.raises(ControlPlaneError, match="did not end within 1 s"):
        LocalShell().run("sleep 30", timeout_s=1)


def test_a_namespace_name_that_could_inject_is_refused() -> None:
    for bad in ("lab; rm -rf /", "../x", "", "a b"):
        with pytest.raises(ConfigError, match="not a valid name"):
            LocalShell(bad)
