"""`python -m faults.backends.ratecopy SOURCE TARGET [RATE]`: a directory tree copied at most RATE bytes a second.

A restore's copy step (`faults.backends.pgrestore`), rate-limited the way `pg_basebackup --max-rate`
limits a backup: RATE is kilobytes per second, or with a suffix k (kilobytes) or M (megabytes)
per second. Files keep their modes; symbolic links are copied as links. TARGET must exist and be
empty: nothing is written over.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

CHUNK = 256 * 1024


def bytes_per_s(rate: str) -> float:
    """pg_basebackup's --max-rate notation: 4M is 4 MiB/s, 512k and 512 are 512 KiB/s."""
    unit = {"M": 1024 * 1024, "k": 1024}.get(rate[-1], 1024)
    return float(rate.rstrip("kM")) * unit


def copy_tree(source: Path, target: Path, rate: float | None) -> int:
    """Copy `source`'s contents into the empty `target`, pacing the bytes to `rate` a second; the bytes copied."""
    if any(target.iterdir()):
        raise SystemExit(f"ratecopy: {target} is not empty; nothing is written over")
    start, done = time.monotonic(), 0
    for root, dirs, files in os.walk(source):
        here = target / Path(root).relative_to(source)
        for name in dirs:
            link = Path(root) / name
            if link.is_symlink():
                os.symlink(os.readlink(link), here / name)
            else:
                (here / name).mkdir(mode=link.stat().st_mode & 0o7777)
        for name in files:
            src, dst = Path(root) / name, here / name
            if src.is_symlink():
                os.symlink(os.readlink(src), dst)
                continue
            with src.open("rb") as reading, dst.open("wb") as writing:
                while chunk := reading.read(CHUNK):
                    writing.write(chunk)
                    done += len(chunk)
                    if rate is not None:
                        ahead = done / rate - (time.monotonic() - start)
                        if ahead > 0:
                            time.sleep(ahead)
            shutil.copymode(src, dst)
    return done


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    rate = bytes_per_s(argv[2]) if len(argv) == 3 else None
    copied = copy_tree(Path(argv[0]), Path(argv[1]), rate)
    print(f"ratecopy: {copied} bytes copied")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
