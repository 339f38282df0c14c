"""The run's evidence as one archive a change ticket can hold, and its SHA-256 printed in the PDF.

The archive is deterministic: the results directory's files in sorted order, every entry with the
same time (0), owner (0:0, no names) and mode, gzip written without a time or a name. Archiving the
same results again gives the same bytes, so the hash in the PDF can be re-derived from the results
as well as checked against the archive beside it.
"""

from __future__ import annotations

import gzip
import hashlib
import tarfile
from pathlib import Path

ARCHIVE_NAME = "evidence.tar.gz"
_CHUNK = 1 << 20


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while chunk := source.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _entry(name: str, size: int, *, directory: bool = False) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.uid, info.gid, info.uname, info.gname = size, 0, 0, 0, "", ""
    info.type, info.mode = (tarfile.DIRTYPE, 0o755) if directory else (tarfile.REGTYPE, 0o644)
    return info


def write_archive(results: Path, archive: Path, *, root: str = "allure-results") -> str:
    """`results` (its regular files, recursively; links are not followed) as `archive`; returns its SHA-256."""
    files = sorted(p for p in results.rglob("*") if p.is_file() and not p.is_symlink())
    archive.parent.mkdir(parents=True, exist_ok=True)
    with archive.open("wb") as out, gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0) as packed, \
            tarfile.open(fileobj=packed, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(_entry(root, 0, directory=True))
        for path in files:
            with path.open("rb") as data:
                tar.addfile(_entry(f"{root}/{path.relative_to(results).as_posix()}", path.stat().st_size), data)
    return sha256_of(archive)
