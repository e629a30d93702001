"""All-or-nothing writing of several files: the engine of ``Jail.write_atomically``.

POSIX renames one file at a time, so a write of several files is staged first
and swapped last. Each new content goes to a temp file beside its target
(fsync'd), and each existing target is copied to a backup beside it (where an
expected hash is compared); only then is every temp renamed over its target (a
delete unlinks it) and the directories are fsync'd. If anything fails, the
swaps already done are undone by renaming the backups back, and the temps and
the directories made are removed: the caller sees every change or none.

Crash window: if the process dies while the renames run, some targets hold the
new content and others the old; the backups (``.gate-*.bak``) and temps
(``.gate-*.tmp``) stay beside them. A restored backup is a copy: same content
and mode, a new inode. A change someone else makes to a target between its
backup and its rename is overwritten.

Directories and existing targets are opened only through the jail's checked
walk, which the jail passes in (``open_dir``, ``open_file``).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from meshnode.engines.gate import GateError
from meshnode.engines.gate.location import Location

# (location, depth, made) -> a descriptor of the directory of the first ``depth``
# components, creating missing ones and recording them in ``made``.
OpenDir = Callable[[Location, int, list[tuple[int, str]]], int]
# (dir_fd, name, shown) -> (descriptor, fstat) of a regular, singly linked file;
# GateError "not_found" when it does not exist.
OpenFile = Callable[[int, str, str], tuple[int, os.stat_result]]

_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 16


@dataclass
class Step:
    """One target of the write, with what has been done to it so far."""

    loc: Location
    content: bytes | None  # None: delete the target
    check_hash: bool = False
    expected: str | None = None  # sha256 hex the target must have (None: must be absent)
    dir_fd: int = -1
    existed: bool = False
    temp: str | None = None  # the staged new content, in dir_fd
    backup: str | None = None  # a copy of the previous content, in dir_fd
    swapped: bool = False  # the target now holds the new content (or is gone)


def apply(plan: list[Step], open_dir: OpenDir, open_file: OpenFile) -> None:
    """Write or delete every target of ``plan``, all or nothing; raises GateError."""
    writer = _Writer(open_dir, open_file)
    try:
        for step in plan:
            writer.stage(step)
        for step in plan:
            writer.swap(step)
        writer.sync()
    except BaseException as exc:
        problems = writer.undo(plan)
        if problems:
            raise GateError("io_error", f"writing failed ({_describe(exc)}) and could not be undone for "
                            f"{', '.join(problems)}; their previous contents are kept in .gate-*.bak "
                            "files beside them") from exc
        if isinstance(exc, OSError):
            raise GateError("io_error", f"writing failed, nothing was changed: {_describe(exc)}") from None
        raise
    else:
        writer.drop_backups(plan)
    finally:
        writer.close()


@dataclass
class _Writer:
    open_dir: OpenDir
    open_file: OpenFile
    dirs: dict[tuple[int, tuple[str, ...]], int] = field(default_factory=dict)
    made: list[tuple[int, str]] = field(default_factory=list)

    def stage(self, step: Step) -> None:
        loc = step.loc
        where = (loc.root, loc.parts[:-1])
        if where not in self.dirs:
            self.dirs[where] = self.open_dir(loc, len(loc.parts) - 1, self.made)
        step.dir_fd = self.dirs[where]
        mode = None
        try:
            old, st = self.open_file(step.dir_fd, loc.parts[-1], loc.key)
        except GateError as exc:
            if exc.code != "not_found":
                raise
        else:
            try:
                step.existed, mode = True, stat.S_IMODE(st.st_mode) & 0o777
                step.backup = _new_temp(step.dir_fd, ".bak", 0o600)
                digest = _copy_to(old, step.dir_fd, step.backup, mode)
            finally:
                os.close(old)
            if step.check_hash and digest != step.expected:
                raise GateError("conflict", f"{loc.key} changed since it was read")
        if step.check_hash and not step.existed and step.expected is not None:
            raise GateError("conflict", f"{loc.key} was removed since it was read")
        if step.content is not None:
            step.temp = _new_temp(step.dir_fd, ".tmp", 0o666)
            fd = os.open(step.temp, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=step.dir_fd)
            try:
                _write_all(fd, step.content)
                if mode is not None:
                    os.fchmod(fd, mode)
                os.fsync(fd)
            finally:
                os.close(fd)

    def swap(self, step: Step) -> None:
        name = step.loc.parts[-1]
        if step.temp is not None:
            os.rename(step.temp, name, src_dir_fd=step.dir_fd, dst_dir_fd=step.dir_fd)
            step.temp, step.swapped = None, True
        elif step.existed:
            os.unlink(name, dir_fd=step.dir_fd)
            step.swapped = True

    def sync(self) -> None:
        for fd in {*self.dirs.values(), *(parent for parent, _ in self.made)}:
            os.fsync(fd)

    def undo(self, plan: list[Step]) -> list[str]:
        """Put every swapped target back; remove temps and made directories. Returns the
        paths that could not be put back (their backups are kept)."""
        problems = []
        for step in reversed(plan):
            if not step.swapped:
                continue
            name = step.loc.parts[-1]
            try:
                if step.existed:
                    os.rename(step.backup, name, src_dir_fd=step.dir_fd, dst_dir_fd=step.dir_fd)
                    step.backup = None
                else:
                    os.unlink(name, dir_fd=step.dir_fd)
                step.swapped = False
            except OSError:
                problems.append(step.loc.key)
        for step in plan:
            if step.temp is not None:
                _unlink_quietly(step.dir_fd, step.temp)
            if step.backup is not None and not step.swapped:
                _unlink_quietly(step.dir_fd, step.backup)
        for parent, name in reversed(self.made):
            try:
                os.rmdir(name, dir_fd=parent)
            except OSError:
                pass  # not empty: someone else wrote into it meanwhile
        try:
            self.sync()
        except OSError:
            pass
        return problems

    def drop_backups(self, plan: list[Step]) -> None:
        for step in plan:
            if step.backup is not None:
                _unlink_quietly(step.dir_fd, step.backup)

    def close(self) -> None:
        for fd in self.dirs.values():
            os.close(fd)
        for parent, _ in self.made:
            os.close(parent)


def _new_temp(dir_fd: int, suffix: str, mode: int) -> str:
    while True:
        name = f".gate-{secrets.token_hex(8)}{suffix}"
        try:
            fd = os.open(name, _NEW_FILE_FLAGS, mode, dir_fd=dir_fd)
        except FileExistsError:
            continue
        os.close(fd)
        return name


def _copy_to(src: int, dir_fd: int, name: str, mode: int) -> str:
    """Copy an open file into ``name`` with ``mode`` (fsync'd); the SHA-256 of what was copied.
    ``name`` was created private, and gets the original's mode once the copy is complete."""
    digest = hashlib.sha256()
    out = os.open(name, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        while chunk := os.read(src, _CHUNK):
            digest.update(chunk)
            _write_all(out, chunk)
        os.fchmod(out, mode)
        os.fsync(out)
    finally:
        os.close(out)
    return digest.hexdigest()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _unlink_quietly(dir_fd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass


def _describe(exc: BaseException) -> str:
    if isinstance(exc, GateError):
        return exc.reason
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return type(exc).__name__
