"""discover's command line: what it refuses before it contacts anything."""

from __future__ import annotations

import pytest

from harness.cli import main


def test_discover_refuses_winrm_or_sql_without_their_credential_references_before_contacting_anything(
        capsys: pytest.CaptureFixture[str]) -> None:
    base = ["discover", "--vcenter", "192.0.2.1", "--user", "u", "--password-env", "VC", "--thumbprint", "AA"]
    assert main([*base, "--winrm", "192.0.2.2", "--winrm-user", "EXAMPLE\\u"]) == 4
    assert main([*base, "--sql", "192.0.2.3", "--sql-password-env", "SQLPW"]) == 4
    err = capsys.readouterr().err
    assert "--winrm needs --winrm-user and --winrm-password-env" in err and "--sql needs --sql-user" in err
