"""discover's command line: what it refuses before it contacts anything."""

from __future__ import annotations

import pytest

from harness.cli import main
from harness.discover import draft, drafters
from harness_kernel.errors import ConfigError
from harness_platforms.sqlserver.discover import WindowsDraft
from harness_platforms.vsphere.discover import VcenterDraft


def test_discover_refuses_winrm_or_sql_without_their_credential_references_before_contacting_anything(
        capsys: pytest.CaptureFixture[str]) -> None:
    base = ["discover", "--vcenter", "192.0.2.1", "--user", "u", "--password-env", "VC", "--thumbprint", "AA"]
    assert main([*base, "--winrm", "192.0.2.2", "--winrm-user", "EXAMPLE\\u"]) == 4
    assert main([*base, "--sql", "192.0.2.3", "--sql-password-env", "SQLPW"]) == 4
    err = capsys.readouterr().err
    assert "--winrm needs --winrm-user and --winrm-password-env" in err and "--sql needs --sql-user" in err


def test_vcenter_starts_the_draft_and_the_windows_part_is_the_sql_server_platforms_found_through_the_catalogue() -> None:
    assert drafters({"vcenter": None, "winrm": None, "sql": None}) == ([], [])  # nothing asked: no platform drafts
    (root,), (part,) = drafters({"vcenter": "192.0.2.1", "user": "u", "password_env": "VC", "thumbprint": "AA",
                                 "sql": "192.0.2.3", "sql_user": "u", "sql_password_env": "SQLPW", "sql_port": 14330})
    assert isinstance(root, VcenterDraft) and root.request.address == "192.0.2.1" and root.seen is None
    assert isinstance(part, WindowsDraft) and part.winrm is None
    assert part.sql is not None and (part.sql.address, part.sql.port) == ("192.0.2.3", 14330)


def test_a_draft_needs_the_one_platform_it_starts_from() -> None:
    with pytest.raises(ConfigError, match=r"discover: 0 platforms would start the draft; give the options of one"):
        draft({"sql": "192.0.2.3", "sql_user": "u", "sql_password_env": "SQLPW"})


def test_each_platform_declares_the_options_its_drafter_reads(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["discover", "--help"])
    helped = capsys.readouterr().out
    vsphere, sqlserver = helped.index("vSphere (the draft starts from vCenter):"), helped.index("SQL Server and WSFC")
    assert vsphere < sqlserver, "the platform a draft starts from is listed first"
    assert "--thumbprint SHA256" in helped[vsphere:sqlserver] and "--sql-password-env VAR" in helped[sqlserver:]
    assert main(["discover", "--vcenter", "192.0.2.1", "--thumbprint", "AA"]) == 4
    assert main(["discover", "--sql", "192.0.2.3", "--sql-user", "u", "--sql-password-env", "SQLPW"]) == 4
    err = capsys.readouterr().err
    assert "--vcenter needs --user and --password-env" in err
    assert "discover: 0 platforms would start the draft; give the options of one (--vcenter)" in err
