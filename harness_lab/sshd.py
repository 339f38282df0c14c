"""An sshd in the router namespace, so the production `router` backend can drive the lab for real.

Host key and client key are generated per lab in its state directory; the server accepts
only that key, for root, on the router's address on the client link.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness_lab import shell
from harness_lab.layout import SSH_PORT, LabLayout
from harness_lab.services import Services

SERVICE = "sshd"


@dataclass(frozen=True)
class RouterSshd:
    layout: LabLayout
    services: Services

    @property
    def directory(self) -> Path:
        return self.layout.state_dir / "ssh"

    @property
    def host_key_file(self) -> Path:
        return self.directory / "ssh_host_ed25519_key"

    @property
    def client_key_file(self) -> Path:
        return self.directory / "id_ed25519"

    @property
    def host_key(self) -> str:
        """'<type> <base64>' as pinned in the topology's ssh endpoint."""
        kind, blob = (self.host_key_file.with_suffix(".pub")).read_text().split()[:2]
        return f"{kind} {blob}"

    def _keygen(self, path: Path, comment: str) -> None:
        if not path.exists():
            shell.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)])

    def start(self) -> None:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.directory.chmod(0o700)
        self._keygen(self.host_key_file, f"{self.layout.prefix}-router")
        self._keygen(self.client_key_file, f"{self.layout.prefix}-harness")
        authorized = self.directory / "authorized_keys"
        authorized.write_text(self.client_key_file.with_suffix(".pub").read_text())
        authorized.chmod(0o600)
        config = self.directory / "sshd_config"
        config.write_text(
            f"ListenAddress {self.layout.client.router_address}:{SSH_PORT}\n"
            f"HostKey {self.host_key_file}\n"
            f"PidFile {self.directory / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {authorized}\n"
            "PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "UsePAM no\nStrictModes no\nPrintMotd no\nPrintLastLog no\nUseDNS no\nX11Forwarding no\n"
            "AllowTcpForwarding no\nPermitUserEnvironment no\nSubsystem sftp internal-sftp\n"
        )
        shell.run(["/usr/sbin/sshd", "-t", "-f", str(config)])
        # -D: no daemonising, so the pid we record is sshd's own; -e: log to our log file.
        self.services.start(SERVICE, ["/usr/sbin/sshd", "-D", "-e", "-f", str(config)], netns=self.layout.router_netns)
        shell.wait_for(self._listening, 10, "router sshd")

    def _listening(self) -> bool:
        out = shell.run(["ss", "-Hltn", f"sport = :{SSH_PORT}"], netns=self.layout.router_netns, check=False).stdout
        return bool(out.strip())
