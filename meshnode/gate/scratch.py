"""Scratch copies of the workspace, where commands run (so their file changes become drafts).

A command cannot be drafted the way a patch can: it changes files as it
runs. So it runs in a fresh copy of the workspace as the session sees it
(real files plus the session's drafts), owned by the unprivileged user the
runner switches to; afterwards the files it created, changed or deleted
there come back as drafts of the real workspace, reviewed like any other.
The real workspace is never the command's working folder, and never needs
to be writable by that user.

What is copied: regular files the jail lets the agent read (no symlinks,
special files or hard links), up to ``MAX_COPY_BYTES`` in all. What comes
back: regular files up to ``MAX_FILE_BYTES`` each; symlinks and special
files a command makes are reported and ignored.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from meshnode.gate import GateError, drafts
from meshnode.gate.jail import Jail
from meshnode.store.database import Database

MAX_COPY_BYTES = 64 * 1024 * 1024
MAX_FILES = 10_000
MAX_FILE_BYTES = drafts.MAX_DRAFT_BYTES


def prepare(db: Database, jail: Jail, session: str, parent: Path, uid: int | None) -> tuple[Path, dict[str, str]]:
    """A scratch folder under ``parent`` holding the session's view of the workspace, and a
    manifest (relative path -> SHA-256) of what was put there."""
    parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="scratch-", dir=parent))
    try:
        files: dict[str, bytes] = {}
        total = 0
        for rel in _walk(Path(jail.workspace)):
            try:
                data = jail.read_bytes(rel, MAX_FILE_BYTES)
            except GateError:
                continue  # not the agent's to read (a symlink, a hard link, too large): not copied
            total += len(data)
            if total > MAX_COPY_BYTES or len(files) >= MAX_FILES:
                raise GateError("too_large", f"the workspace is larger than a command's scratch copy may be"
                                f" ({MAX_COPY_BYTES >> 20} MiB, {MAX_FILES} files)")
            files[rel] = data
        for row in drafts.review(db, jail, session):
            if row["status"] not in ("pending", "accepted"):
                continue
            if row["deleted"]:
                files.pop(row["path"], None)
            else:
                files[row["path"]] = drafts.read_through(db, jail, session, row["path"], MAX_FILE_BYTES)
        for rel, data in files.items():
            target = scratch / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        if uid is not None:
            _give(scratch, uid)
        return scratch, {rel: _sha(data) for rel, data in files.items()}
    except BaseException:
        remove(scratch)
        raise


def changes(scratch: Path, manifest: dict[str, str]) -> tuple[dict[str, bytes | None], list[str]]:
    """What the command changed: {relative path: new bytes, or None when deleted}, and notes on
    what was ignored (symlinks, special files, files too large)."""
    out: dict[str, bytes | None] = {}
    ignored: list[str] = []
    seen = set()
    for dirpath, dirnames, filenames in os.walk(scratch, followlinks=False):
        for name in dirnames + filenames:
            full = Path(dirpath) / name
            rel = full.relative_to(scratch).as_posix()
            st = os.lstat(full)
            if stat.S_ISDIR(st.st_mode):
                continue
            if not stat.S_ISREG(st.st_mode):
                ignored.append(f"{rel}: not a regular file")
                continue
            if st.st_size > MAX_FILE_BYTES:
                ignored.append(f"{rel}: larger than {MAX_FILE_BYTES} bytes")
                seen.add(rel)
                continue
            seen.add(rel)
            data = full.read_bytes()
            if manifest.get(rel) != _sha(data):
                out[rel] = data
    for rel in manifest:
        if rel not in seen:
            out[rel] = None
    return out, ignored


def remove(scratch: Path) -> None:
    shutil.rmtree(scratch, ignore_errors=True)


def _walk(root: Path):
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not (Path(dirpath) / d).is_symlink())
        for name in sorted(filenames):
            yield (Path(dirpath) / name).relative_to(root).as_posix()


def _give(scratch: Path, uid: int) -> None:
    """The unprivileged user owns its scratch copy (and nothing else of ours)."""
    for dirpath, dirnames, filenames in os.walk(scratch, followlinks=False):
        os.chown(dirpath, uid, uid, follow_symlinks=False)
        for name in filenames:
            os.chown(Path(dirpath) / name, uid, uid, follow_symlinks=False)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
