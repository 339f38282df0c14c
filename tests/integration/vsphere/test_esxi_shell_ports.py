"""The lab's ESXi shells listen on ports of their own, even when another process takes a picked port first.

A port is picked (bound, closed) and then bound by sshd: in between, another process can take it.
Its listener answers connections too, so "the port accepts" is no proof the host's sshd came up:
the shell is proven by its own pid holding the listening socket and, when it lost the port, it
is started again on another.
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from harness_lab import esxi
from harness_lab.esxi import EsxiShells
from harness_lab.services import Services

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the shells mount a lean /etc/passwd (root)")


@pytest.mark.reproducer("Y-close-then-bind")
def test_a_port_taken_before_sshd_binds_it_is_picked_again_and_the_shell_is_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, timeout=30)
    services = Services(tmp_path / "pids")
    services.directory.mkdir(parents=True)
    shells = EsxiShells(tmp_path / "esxi", services)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        picks, pick = iter([taken.getsockname()[1]]), esxi.free_port
        monkeypatch.setattr(esxi, "free_port", lambda: next(picks, None) or pick())
        try:
            [endpoint] = shells.start(["esx-a1"], control_url="http://127.0.0.1:9", client_public_key=key.with_suffix(".pub"),
                                      prefix="hports")
            assert endpoint.port != taken.getsockname()[1]
            pid = services.pid("esxi-esx-a1")
            assert services.alive("esxi-esx-a1") and Path(f"/proc/{pid}").exists()
            banner = socket.create_connection(("127.0.0.1", endpoint.port), timeout=5).recv(64)
            assert banner.startswith(b"SSH-2.0-OpenSSH"), banner
        finally:
            services.kill("esxi-esx-a1")
