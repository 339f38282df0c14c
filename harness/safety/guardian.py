"""The local guardian: ends faults whose run is gone or late, so a kill -9 is undone without anyone typing recover.

`python -m harness.safety.guardian --state-dir D`, one per state directory (it holds
`D/guardian.lock`). A run starts it when none is alive (`ensure_guardian`): detached, in a
session of its own, stdin/stdout/stderr on /dev/null, SIGHUP and SIGINT ignored, so neither
the run's terminal nor a kill of the run's process group takes it along.

Every half second it reads the journal and reverts, through the same path as `recover`
(`revert.revert_entry`, holding the entry's lock, so a revert in progress is never doubled):

- an entry whose owner died: pid *and* process start time (a reused pid is not the owner);
- an entry past its deadline, even if its run still lives (hung, stopped, cut off).

It exits once the journal holds nothing it could act on and no run registered in `D/owners`
is alive. It logs to `D/guardian.log` only; it resolves credentials as the run does (the
environment it inherited, the keyring) and writes none: its log masks them.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from types import FrameType

from faults import sections
from harness.safety.journal import EntryBusy, Journal, JournalEntry, open_lock_file
from harness.safety.revert import Builder, revert_entry, topology_of
from harness_kernel.errors import MissingCredentialError
from harness_kernel.paths import private_dir
from harness_kernel.procs import ProcessIdentity
from harness_kernel.redaction import Redactor, usernames_in
from harness_kernel.topology.credentials import resolve_secret

log = logging.getLogger("harness.guardian")

LOCK = "guardian.lock"
LOG = "guardian.log"
OWNERS = "owners"
POLL_S = 0.5
DEADLINE_GRACE_S = 2.0  # the run trips on its own deadline first; the guardian acts this much later
RETRY_AFTER_S = 15.0
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]


# -- runs that the guardian stays up for -------------------------------------------------------

def register_owner(state: Path, run_id: str) -> None:
    owners = private_dir(state / OWNERS)
    path = owners / f"{run_id}.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump({"run_id": run_id, **ProcessIdentity.current().to_dict()}, handle)


def unregister_owner(state: Path, run_id: str) -> None:
    (state / OWNERS / f"{run_id}.json").unlink(missing_ok=True)


def live_owners(state: Path) -> list[ProcessIdentity]:
    """Registered runs still alive; the records of dead ones are removed."""
    alive = []
    for path in sorted((state / OWNERS).glob("*.json")):
        try:
            owner = ProcessIdentity.from_dict(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            path.unlink(missing_ok=True)
            continue
        if owner.alive():
            alive.append(owner)
        elif owner.local:
            path.unlink(missing_ok=True)
    return alive


# -- one guardian per state directory ----------------------------------------------------------

def running_guardian(state: Path) -> int | None:
    """The pid of the guardian holding `state`'s guardian lock, or None if there is none."""
    path = state / LOCK
    if not path.exists():
        return None
    fd = open_lock_file(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                return int(json.loads(os.pread(fd, 4096, 0).decode() or "{}").get("pid") or 0) or -1
            except ValueError:
                return -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def ensure_guardian(state: Path, *, wait_s: float = 10.0) -> int | None:
    """Start the guardian of `state` unless one is alive; its pid (None if it did not come up)."""
    state = private_dir(state)
    pid = running_guardian(state)
    if pid is not None:
        return pid
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(_PACKAGE_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    starter = subprocess.Popen([sys.executable, "-m", "harness.safety.guardian", "--state-dir", str(state), "--detach"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True, close_fds=True, cwd="/", env=env)
    starter.wait(timeout=30)  # it forks the guardian and exits: the guardian is nobody's child here
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        pid = running_guardian(state)
        if pid is not None and pid > 0:
            return pid
        time.sleep(0.05)
    log.warning("the guardian of %s did not start; see %s", state, state / LOG)
    return None


# -- the guardian itself -----------------------------------------------------------------------

class _Masking(logging.Formatter):
    """Masks every credential the guardian resolved, in messages and tracebacks alike, by the kernel's rule
    (`harness_kernel.redaction`: escaped, encoded and cut-short spellings too, as everything a run prints)."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(process)d %(levelname)s %(message)s")
        self._secrets: set[str] = set()
        self._usernames: set[str] = set()
        self._redactor = Redactor()

    def learn(self, secrets: Iterable[str], usernames: Iterable[str] = ()) -> None:
        """Mask these from now on (and `user:secret` in base64, as HTTP Basic sends it)."""
        secrets, usernames = set(secrets) - self._secrets, set(usernames) - self._usernames
        if secrets or usernames:
            self._secrets |= secrets
            self._usernames |= usernames
            self._redactor = Redactor(self._secrets, self._usernames)

    def format(self, record: logging.LogRecord) -> str:
        return self._redactor.mask(super().format(record))


class Guardian:
    def __init__(self, state: Path, *, build: Builder | None = None, poll_s: float = POLL_S,
                 masking: _Masking | None = None) -> None:
        self.state = state
        self.journal = Journal(state / "journal")
        self.build = build
        self.poll_s = poll_s
        self.masking = masking
        self.stopping = False
        self._retry_at: dict[str, float] = {}
        self._noted: set[str] = set()

    def run(self, lock_fd: int) -> int:
        log.info("guardian of %s started (pid %d)", self.state, os.getpid())
        while not self.stopping:
            try:
                self.pass_once()
                if self._idle():
                    # let go, then look again: a run that registered meanwhile saw the lock held and
                    # started no guardian of its own, so it must find this one still here
                    fcntl.flock(lock_fd, fcntl.LOCK_UN)
                    if not self._idle():
                        try:
                            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        except BlockingIOError:
                            log.info("another guardian took over; exiting")
                            return 0
                        self._write_lock_info(lock_fd)
                        continue
                    log.info("journal empty and no run alive: exiting")
                    return 0
            except Exception:
                log.exception("guardian pass failed; going on")
            time.sleep(self.poll_s)
        log.info("stopped by signal: exiting (the journal keeps what is left)")
        return 0

    def _idle(self) -> bool:
        return not self.journal.scan().entries and not live_owners(self.state)

    def pass_once(self) -> None:
        scan = self.journal.scan()
        for path, reason in scan.unreadable:
            self._note(str(path), f"unreadable journal entry {path}: {reason}; `python -m harness recover` reports it")
        for entry in scan.entries:
            if self.stopping:
                return
            self.consider(entry)

    def consider(self, entry: JournalEntry) -> None:
        if not entry.owner.local:
            self._note(entry.id, f"{entry.describe()} ({entry.id}) belongs to a run on {entry.hostname}: not mine")
            return
        dead = not entry.owner_alive()
        overdue = entry.overdue(time.time() - DEADLINE_GRACE_S)
        if not dead and not overdue:
            return
        if time.monotonic() < self._retry_at.get(entry.id, 0.0):
            return
        why = f"its run ({entry.owner.describe()}) is gone" if dead else f"past its deadline ({entry.deadline_basis})"
        log.info("reverting %s (entry %s): %s", entry.describe(), entry.id, why)
        self._mask_credentials(entry)
        try:
            done = revert_entry(self.journal, entry, role="guardian", build=self.build, say=log.info)
        except EntryBusy as busy:
            log.info("not reverting %s: %s", entry.describe(), busy)
            return
        except Exception as exc:
            self._retry_at[entry.id] = time.monotonic() + RETRY_AFTER_S
            log.error("revert of %s (entry %s) failed: %s; trying again in %.0f s", entry.describe(), entry.id, exc,
                      RETRY_AFTER_S)
            return
        log.info("reverted %s (entry %s): %s", entry.describe(), entry.id, done)

    def _mask_credentials(self, entry: JournalEntry) -> None:
        if self.masking is None:
            return
        try:
            topology = topology_of(entry)
            refs = sections.every_secret_ref(topology)
        except Exception:
            return
        secrets = []
        for path, ref in refs:
            with contextlib.suppress(MissingCredentialError):
                secrets.append(resolve_secret(ref, path).reveal())
        self.masking.learn(secrets, usernames_in(topology))

    def _note(self, key: str, message: str) -> None:
        if key not in self._noted:
            self._noted.add(key)
            log.warning("%s", message)

    @staticmethod
    def _write_lock_info(fd: int) -> None:
        info = {"pid": os.getpid(), "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)


def _setup_logging(state: Path) -> _Masking:
    fd = os.open(state / LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    handler = logging.StreamHandler(os.fdopen(fd, "a", buffering=1))
    masking = _Masking()
    handler.setFormatter(masking)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    return masking


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.safety.guardian",
                                     description="revert journaled faults whose run died or overran its deadline")
    parser.add_argument("--state-dir", required=True, type=Path)
    parser.add_argument("--detach", action="store_true", help="fork into the background and return at once")
    args = parser.parse_args(argv)
    for signum in (signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, signal.SIG_IGN)
    os.umask(0o077)
    if args.detach and os.fork() > 0:
        os._exit(0)  # the starter returns; the guardian is reparented away from the run
    state = private_dir(args.state_dir)
    lock_fd = open_lock_file(state / LOCK)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 0  # one is alive already
    masking = _setup_logging(state)
    Guardian._write_lock_info(lock_fd)
    guardian = Guardian(state, masking=masking)

    def stop(signum: int, frame: FrameType | None) -> None:
        guardian.stopping = True

    signal.signal(signal.SIGTERM, stop)
    return guardian.run(lock_fd)


if __name__ == "__main__":
    sys.exit(main())
