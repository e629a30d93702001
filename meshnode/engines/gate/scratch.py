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
import tempfile
from pathlib import Path

from meshnode.engines.gate import GateError
from meshnode.records.gate import drafts
from meshnode.engines.gate.jail import Jail, read_regular_at
from meshnode.store.database import Database

MAX_COPY_BYTES = 64 * 1024 * 1024
MAX_FILES = 10_000
MAX_FILE_BYTES = drafts.MAX_DRAFT_BYTES


def records_folder(parent: Path) -> Path:
    """Where the running sandboxes of the node whose scratch folder is ``parent`` are recorded
    (``sandbox.remember``), beside its scratch copies."""
    return parent / "sandboxes"


def prepare(db: Database, jail: Jail, session: str, parent: Path, uid: int | None) -> tuple[Path, dict[str, str]]:
    """A scratch folder under ``parent`` holding the session's view of the workspace, and a
    manifest (relative path -> SHA-256) of what was put there. Only the workspace (the jail's
    first root) is copied; drafts count against the same budget as files."""
    parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="scratch-", dir=parent))
    try:
        files: dict[str, bytes] = {}
        total = 0

        def put(rel: str, data: bytes | None) -> None:
            nonlocal total
            total -= len(files.pop(rel, b""))
            if data is not None:
                files[rel] = data
                total += len(data)
            if len(files) > MAX_FILES or total > MAX_COPY_BYTES:
                raise GateError("too_large", f"the workspace is larger than a command's scratch copy may be"
                                f" ({MAX_COPY_BYTES >> 20} MiB, {MAX_FILES} files)")

        for rel in _walk(Path(jail.workspace)):
            try:
                data = jail.read_bytes(rel, MAX_FILE_BYTES)
            except GateError:
                continue  # not the agent's to read (a symlink, a hard link, too large): not copied
            put(rel, data)
        for key, content in drafts.visible(db, session).items():
            if not key.startswith("/"):  # drafts in other roots are not part of the workspace's copy
                put(key, content)
        for rel, data in files.items():
            target = scratch / rel
            if os.path.commonpath([scratch, target]) != str(scratch):  # keys are relative; belt and braces
                raise GateError("outside_jail", f"{rel} would leave the scratch copy")
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            except OSError as exc:  # e.g. a drafted file where another draft needs a folder
                raise GateError("bad_drafts", f"cannot lay out {rel} in the scratch copy: {exc.strerror}"
                                " (a file and a folder of the same name among the drafts?)") from None
        if uid is not None:
            _give(scratch, uid)
        return scratch, {rel: _sha(data) for rel, data in files.items()}
    except BaseException:
        remove(scratch)
        raise


def changes(scratch: Path, manifest: dict[str, str]) -> tuple[dict[str, bytes | None], list[str]]:
    """What the command changed: {relative path: new bytes, or None when deleted}, and notes on
    what was ignored (symlinks, special or hard-linked files, names that are not UTF-8, files
    too large, anything past the budget). Read through directory descriptors without following
    links, so nothing the command left behind can point the node (root) elsewhere."""
    out: dict[str, bytes | None] = {}
    ignored: list[str] = []
    seen: set[str] = set()
    budget = MAX_COPY_BYTES
    root_fd = os.open(scratch, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        for dirpath, dirnames, filenames, dir_fd in os.fwalk(".", dir_fd=root_fd, follow_symlinks=False):
            dirnames.sort()
            for name in sorted(filenames):
                rel = os.path.normpath(os.path.join(dirpath, name))
                try:
                    rel.encode("utf-8")
                except UnicodeEncodeError:
                    ignored.append(f"{rel.encode('utf-8', 'backslashreplace').decode()}: the name is not UTF-8")
                    continue
                seen.add(rel)
                try:
                    data = read_regular_at(dir_fd, name, MAX_FILE_BYTES)
                except OSError as exc:
                    ignored.append(f"{rel}: {exc.strerror}")
                    continue
                if data is None:
                    ignored.append(f"{rel}: not a regular, singly linked file of at most {MAX_FILE_BYTES} bytes")
                    continue
                if manifest.get(rel) == _sha(data):
                    continue
                if len(out) >= MAX_FILES or len(data) > budget:
                    ignored.append(f"{rel}: past the budget of changes one command may bring back")
                    continue
                budget -= len(data)
                out[rel] = data
    finally:
        os.close(root_fd)
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
