"""discover's command line: what it refuses before it contacts anything."""

from __future__ import annotations

import pytest

from harness.cli import main
from harness.discover import drafters
from harness_platforms.sqlserver.discover import WindowsDraft


def test_discover_refuses_winrm_or_sql_without_their_credential_references_before_contacting_anything(
        capsys: pytest.CaptureFixture[str]) -> None:
    base = ["discover", "--vcenter", "192.0.2.1", "--user", "u", "--password-env", "VC", "--thumbprint", "AA"]
    assert main([*base, "--winrm", "192.0.2.2", "--winrm-user", "EXAMPLE\\u"]) == 4
    assert main([*base, "--sql", "192.0.2.3", "--sql-password-env", "SQLPW"]) == 4
    err = capsys.readouterr().err
    assert "--winrm needs --winrm-user and --winrm-password-env" in err and "--sql needs --sql-user" in err


def test_the_windows_part_is_the_sql_server_platforms_drafter_found_through_the_catalogue() -> None:
    assert drafters({"winrm": None, "sql": None}) == ()  # nothing asked: no platform drafts
    (part,) = drafters({"sql": "192.0.2.3", "sql_user": "u", "sql_password_env": "SQLPW", "sql_port": 14330})
    assert isinstance(part, WindowsDraft) and part.winrm is None
    assert part.sql is not None and (part.sql.address, part.sql.port) == ("192.0.2.3", 14330)
