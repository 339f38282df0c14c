"""The simulated hosts' ESXi shells: one sshd per host on 127.0.0.1, and the vSAN disk fault script.

The production vsan backend logs in to a host over SSH (paramiko, host key pinned) and runs
`python .../vsanDiskFaultInjection.pyc` with `-p | -t -r SECS | -u | -c` and `-d DEVICE`. Here
each host's sshd runs the lab's own script of that name and flags, compiled to a `.pyc` as
the real one is, which posts the fault to the simulator's control API
(`POST /disks/<host>/<device>`); which host it is comes from the sshd's `SetEnv`, and `python`
on the session's PATH is the interpreter that compiled it.

The sshds run in the root namespace (the simulator's control API listens on its loopback),
each with its own host key, accepting only the lab's client key, for root. Commands run
through the login shell; root's here sources a slow start-up file, so each sshd runs in a
private mount namespace where /etc/passwd gives root a lean `/bin/sh` and VMware's script
directory, /usr/lib/vmware/vsan/bin, is the lab's: the sessions run the very command lines a
real host gets (the topology's defaults), and nothing outside that sshd sees either. The lab
leaves the empty mount point /usr/lib/vmware/vsan/bin on this machine (Debian has no such path).
"""

from __future__ import annotations

import py_compile
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from harness_kernel import procs
from harness_kernel.errors import ControlPlaneError
from harness_lab import shell
from harness_lab.services import Services

SCRIPT_NAME = "vsanDiskFaultInjection.pyc"
VMWARE_VSAN_BIN = Path("/usr/lib/vmware/vsan/bin")
LEAN_SHELL = "/bin/sh"
READY_TIMEOUT_S = 10.0
HOST_ENV = "HARNESS_ESXI_HOST"
CONTROL_ENV = "HARNESS_VSIM_CONTROL"

SCRIPT = '''"""The lab's vSAN disk fault injection: VMware's flags, acting on the simulator's device state."""
import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

parser = argparse.ArgumentParser(prog="vsanDiskFaultInjection.pyc")
mode = parser.add_mutually_exclusive_group(required=True)
mode.add_argument("-p", action="store_true", help="inject a permanent disk error")
mode.add_argument("-t", action="store_true", help="inject a transient disk error (with -r)")
mode.add_argument("-u", action="store_true", help="hot unplug the disk")
mode.add_argument("-c", action="store_true", help="clear injected errors")
parser.add_argument("-r", type=int, default=0, metavar="SECONDS", help="how long a transient error lasts")
parser.add_argument("-d", required=True, metavar="DEVICE", help="device canonical name, e.g. naa.5000c5000a101")
args = parser.parse_args()
if args.t and args.r <= 0:
    parser.error("-t needs -r SECONDS")
fault = "permanent" if args.p else "transient" if args.t else "unplug" if args.u else "clear"
host, control = os.environ.get("''' + HOST_ENV + '''"), os.environ.get("''' + CONTROL_ENV + '''")
if not host or not control:
    sys.exit("not a simulated host: the sshd sets ''' + HOST_ENV + ''' and ''' + CONTROL_ENV + '''")
url = f"{control}/disks/{urllib.parse.quote(host)}/{urllib.parse.quote(args.d)}"
body = json.dumps({"fault": fault, "seconds": args.r}).encode()
request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(request, timeout=10) as reply:
        reply.read()
except urllib.error.HTTPError as exc:
    sys.exit(f"{args.d}: {exc.code} {exc.read().decode(errors='replace').strip()}")
except OSError as exc:
    sys.exit(f"{args.d}: the host's storage stack did not answer ({exc})")
print(f"{fault} fault on {args.d}: done")
'''


@dataclass(frozen=True)
class EsxiEndpoint:
    host: str
    port: int
    host_key: str  # '<type> <base64>', as pinned in the topology


PORT_PICKS = 5  # a port another process takes between its pick and sshd's bind is picked again, this often


def free_port() -> int:
    """A port the kernel has just handed out on 127.0.0.1 (the sshd binds it a moment later)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@dataclass(frozen=True)
class EsxiShells:
    directory: Path
    services: Services

    @property
    def script(self) -> Path:
        return self.directory / "bin" / SCRIPT_NAME

    @property
    def bin_dir(self) -> Path:
        """First on the sessions' PATH: the script, and `python` (this interpreter, which compiled it)."""
        return self.directory / "bin"

    def install_script(self) -> Path:
        self.bin_dir.mkdir(parents=True, exist_ok=True)
        source = self.bin_dir / "vsanDiskFaultInjection.py"
        source.write_text(SCRIPT)
        py_compile.compile(str(source), cfile=str(self.script), doraise=True)
        python = self.bin_dir / "python"
        python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
        python.chmod(0o755)
        return self.script

    def _passwd(self) -> Path:
        """A copy of /etc/passwd where root's shell is lean (bind-mounted for the sshds only)."""
        lines = []
        for line in Path("/etc/passwd").read_text().splitlines():
            fields = line.split(":")
            if len(fields) == 7 and fields[0] == "root":
                fields[6] = LEAN_SHELL
            lines.append(":".join(fields))
        passwd = self.directory / "passwd"
        passwd.write_text("\n".join(lines) + "\n")
        passwd.chmod(0o644)
        return passwd

    def start(self, hosts: list[str], *, control_url: str, client_public_key: Path, prefix: str) -> list[EsxiEndpoint]:
        """One sshd per host (any running ones of this lab restarted); their ports and pinned host keys."""
        for name in hosts:
            self.services.kill(f"esxi-{name}")
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.directory.chmod(0o700)
        self.install_script()
        VMWARE_VSAN_BIN.mkdir(parents=True, exist_ok=True)  # the mount point; it stays empty outside the sshds
        passwd = self._passwd()
        authorized = self.directory / "authorized_keys"
        authorized.write_text(client_public_key.read_text())
        authorized.chmod(0o600)
        started = {name: self._start_sshd(name, control_url, passwd, authorized, prefix) for name in hosts}
        deadline = time.monotonic() + READY_TIMEOUT_S
        for name in hosts:
            for _ in range(PORT_PICKS):
                if self._listens(started[name], deadline):
                    break
                started[name] = self._start_sshd(name, control_url, passwd, authorized, prefix)  # port taken
            else:
                raise ControlPlaneError(f"ESXi sshd of {name}: {PORT_PICKS} ports on 127.0.0.1 were each taken by "
                                        "another process before sshd could bind them")
        return [started[name] for name in hosts]

    def _start_sshd(self, name: str, control_url: str, passwd: Path, authorized: Path, prefix: str) -> EsxiEndpoint:
        """One host's sshd on a port just picked (not yet known to be its: `_listens` says)."""
        home = self.directory / name
        home.mkdir(exist_ok=True)
        key = home / "ssh_host_ed25519_key"
        if not key.exists():
            shell.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{prefix}-{name}", "-f", str(key)])
        port = free_port()
        config = home / "sshd_config"
        config.write_text(
            f"ListenAddress 127.0.0.1:{port}\nHostKey {key}\nPidFile {home / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {authorized}\n"
            f"SetEnv {HOST_ENV}={name} {CONTROL_ENV}={control_url} PATH={self.bin_dir}:/usr/bin:/bin\n"
            "PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "UsePAM no\nStrictModes no\nPrintMotd no\nPrintLastLog no\nUseDNS no\nX11Forwarding no\n"
            "AllowTcpForwarding no\nPermitUserEnvironment no\nMaxStartups 30:30:60\n")
        shell.run(["/usr/sbin/sshd", "-t", "-f", str(config)])
        # A private mount namespace: the lean /etc/passwd is this sshd's alone. -D keeps the pid ours.
        # VMware's script directory is the lab's bin there too.
        argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                'mount --bind "$1" /etc/passwd && mount --bind "$2" "$3" && shift 3 && exec "$@"', "sh",
                str(passwd), str(self.bin_dir), str(VMWARE_VSAN_BIN),
                "/usr/sbin/sshd", "-D", "-e", "-f", str(config)]
        self.services.start(f"esxi-{name}", argv)
        kind, blob = key.with_suffix(".pub").read_text().split()[:2]
        return EsxiEndpoint(name, port, f"{kind} {blob}")

    def _listens(self, endpoint: EsxiEndpoint, deadline: float) -> bool:
        """True once this host's sshd itself listens on its port (its pid holds the socket: -D keeps it the service's
        pid); False if it ended while another process holds the port; a ControlPlaneError naming its log otherwise."""
        service = f"esxi-{endpoint.host}"
        while True:
            alive, pid = self.services.alive(service), self.services.pid(service)
            if alive and pid is not None and procs.listens_on(pid, "127.0.0.1", endpoint.port):
                return True
            if not alive and _listening(endpoint.port):
                return False
            if not alive or time.monotonic() > deadline:
                tail = self.services.logfile(service).read_text(errors="replace").strip()[-600:]
                raise ControlPlaneError(f"ESXi sshd of {endpoint.host} not listening on 127.0.0.1:{endpoint.port} "
                                        f"within {READY_TIMEOUT_S:g} s\n{tail}")
            time.sleep(0.05)
