"""The I/O workload bypasses the page cache where the filesystem allows it, and its files are flushed between
windows, so none of its writes is written back inside the next measured window."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from workloads import fio
from workloads.fio import direct_io_supported, flush_files


def test_a_filesystem_that_takes_o_direct_is_found_so_and_the_probe_leaves_nothing(tmp_path: Path) -> None:
    assert direct_io_supported(tmp_path / "data")  # the test machine's /tmp is ext4
    assert list((tmp_path / "data").iterdir()) == []


def test_a_filesystem_that_refuses_o_direct_runs_the_workload_buffered(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = os.open

    def refusing(path: str, flags: int, mode: int = 0o777) -> int:
        if flags & os.O_DIRECT:
            # open(2): "EINVAL The filesystem does not support the O_DIRECT flag."
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_open(path, flags, mode)

    monkeypatch.setattr(fio.os, "open", refusing)
    assert not direct_io_supported(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_flushing_syncs_the_workloads_own_files_only(tmp_path: Path) -> None:
    data, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    data.mkdir()
    elsewhere.mkdir()
    for name in ("mbx1-db.dat", "mbx1-log.dat"):
        (data / name).write_bytes(b"x" * 65536)
    (elsewhere / "not-ours.dat").write_bytes(b"y")
    (data / "link.dat").symlink_to(elsewhere / "not-ours.dat")
    (data / "sub").mkdir()
    assert flush_files(data) == 2
    assert flush_files(tmp_path / "missing") == 0
