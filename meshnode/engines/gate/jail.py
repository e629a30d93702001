"""The jail: every file the gate reads or writes lies inside the workspace roots.

A path is first placed lexically (``a/../b`` is ``b``; ``..`` may not leave
the workspace; an absolute path must lie in one root, compared by
``os.path.commonpath``). It is then checked again at *use* time: every
access walks from a descriptor of the root, one component at a time, with
``O_NOFOLLOW`` and ``dir_fd``, so a symlink swapped in after a check cannot
redirect the access, and ``fstat`` of the opened descriptor decides what it
is. Symlinks, special files (devices, fifos, sockets), hard-linked files and
/proc, /sys, /dev are refused. ``..`` is folded before any access
(``link/../x`` is ``x``, whatever ``link`` is), so it never climbs out of a
symlink's target.

``write_atomically`` changes several files all or nothing; the staging, renames
and undo live in ``meshnode.engines.gate.atomic_write``, which opens directories and
targets only through this module's checked walk.

Not covered: a directory we hold open that someone with write access to the
workspace *moves* out of it during one call (the access then happens at its
new place), and mounts (a bind mount of /proc inside the workspace looks like
ordinary files).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from meshnode.engines.gate import GateError, atomic_write
from meshnode.engines.gate.atomic_write import Step
from meshnode.engines.gate.location import Location

MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255
SYSTEM_TREES = ("/proc", "/sys", "/dev")
SEARCH_LINE_CHARS = 300

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a fifo swapped in after the lstat check cannot block the open.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
_CHUNK = 1 << 16


@dataclass(frozen=True)
class _Root:
    path: str
    dev: int
    ino: int


class Jail:
    """Confines file access to ``roots`` (existing directories; the first is the workspace)."""

    def __init__(self, roots: Sequence[str | Path]):
        if not roots:
            raise GateError("bad_path", "the jail needs at least one root directory")
        self._roots = [_make_root(r) for r in roots]

    @property
    def workspace(self) -> str:
        return self._roots[0].path

    @property
    def roots(self) -> list[str]:
        return [r.path for r in self._roots]

    # --- placing paths --------------------------------------------------

    def locate(self, path: str | Path) -> Location:
        """Place ``path`` lexically (no file system access); raises GateError."""
        text = _checked_text(path)
        if text.startswith("/"):
            absolute = "/" + "/".join(_fold(text.split("/"), may_leave=True))
        else:
            parts = _fold(text.split("/"), may_leave=False)
            if parts is None:
                raise GateError("outside_jail", f"{text} leaves the workspace")
            absolute = os.path.join(self.workspace, *parts)
        for tree in SYSTEM_TREES:
            if os.path.commonpath([tree, absolute]) == tree:
                raise GateError("outside_jail", f"{absolute} is under {tree}, which the gate never touches")
        index = self._root_of(absolute)
        if index is None:
            raise GateError("outside_jail", f"{absolute} is outside the workspace roots")
        rel = os.path.relpath(absolute, self._roots[index].path)
        parts = () if rel == "." else tuple(rel.split("/"))
        for name in parts:
            if len(os.fsencode(name)) > MAX_NAME_BYTES:
                raise GateError("bad_path", f"a component of {text} is longer than {MAX_NAME_BYTES} bytes")
        return Location(index, "" if index == 0 else self._roots[index].path, parts)

    def _root_of(self, absolute: str) -> int | None:
        """The most specific root containing ``absolute``."""
        best = None
        for i, root in enumerate(self._roots):
            if os.path.commonpath([root.path, absolute]) == root.path:
                if best is None or len(root.path) > len(self._roots[best].path):
                    best = i
        return best

    def resolve(self, path: str | Path) -> str:
        """The path's key (normalized, relative to the workspace, absolute in another root),
        after checking what exists of it now: no symlink, special file or hard link."""
        loc = self.locate(path)
        self._inspect(loc)
        return loc.key

    # --- reading --------------------------------------------------------

    def exists(self, path: str | Path) -> bool:
        """True if the path exists; a refused path (a symlink, a device...) raises."""
        return self._inspect(self.locate(path)) is not None

    def read_bytes(self, path: str | Path, max_bytes: int) -> bytes:
        loc = self.locate(path)
        with self._open_final(loc) as (fd, st):
            _require_file(st, loc.key)
            if st.st_size > max_bytes:
                raise _too_large(loc.key, max_bytes)
            data = _read_at_most(fd, max_bytes + 1)
        if len(data) > max_bytes:
            raise _too_large(loc.key, max_bytes)
        return data

    def file_hash(self, path: str | Path) -> str | None:
        """SHA-256 (hex) of the file's content; None when it does not exist."""
        loc = self.locate(path)
        try:
            with self._open_final(loc) as (fd, st):
                _require_file(st, loc.key)
                return _hash_fd(fd)
        except GateError as exc:
            if exc.code == "not_found":
                return None
            raise

    def list_dir(self, path: str | Path = ".", max_entries: int = 1000) -> list[dict]:
        """The first ``max_entries`` entries by name: name, kind (file|dir|symlink|other), size."""
        loc = self.locate(path)
        entries = []
        with self._open_final(loc) as (fd, st):
            if not stat.S_ISDIR(st.st_mode):
                raise GateError("bad_path", f"{loc.key} is not a directory")
            for name in sorted(os.listdir(fd))[:max(0, max_entries)]:
                try:
                    entry = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                kind = _kind(entry.st_mode)
                entries.append({"name": name, "kind": kind, "size": entry.st_size if kind == "file" else None})
        return entries

    def search(self, pattern: str, path: str | Path = ".", max_matches: int = 200,
               max_file_bytes: int = 1 << 20) -> list[dict]:
        """Lines containing ``pattern`` (plain substring) in the regular files under ``path``:
        path, line (1-based), text. Symlinks, special and hard-linked files, files larger
        than ``max_file_bytes`` and binary files (with a NUL byte) are skipped."""
        if not isinstance(pattern, str) or not pattern:
            raise GateError("bad_pattern", "the search text is empty")
        needle = pattern.encode("utf-8", "surrogateescape")
        loc = self.locate(path)
        matches: list[dict] = []
        with self._open_final(loc) as (fd, st):
            if not stat.S_ISDIR(st.st_mode):
                raise GateError("bad_path", f"{loc.key} is not a directory")
            for dirpath, dirnames, filenames, dir_fd in os.fwalk(".", dir_fd=fd, follow_symlinks=False):
                dirnames.sort()
                for name in sorted(filenames):
                    data = _small_regular_file(dir_fd, name, max_file_bytes)
                    if data is None or b"\0" in data:
                        continue
                    shown = os.path.normpath(os.path.join(loc.key, dirpath, name))
                    for number, line in enumerate(data.splitlines(), start=1):
                        if needle in line:
                            text = line.decode("utf-8", "replace")[:SEARCH_LINE_CHARS]
                            matches.append({"path": shown, "line": number, "text": text})
                            if len(matches) >= max_matches:
                                return matches
        return matches

    # --- writing --------------------------------------------------------

    def write_atomically(self, changes: Mapping[str, bytes | None], *,
                         expected_hashes: Mapping[str, str | None] | None = None) -> None:
        """Write (bytes) or delete (None) every path, all or nothing.

        Every target is placed and checked first; ``meshnode.engines.gate.atomic_write``
        then stages the new contents and backups beside the targets, renames them
        into place and undoes the renames if anything fails. ``expected_hashes``
        (path -> sha256 hex, None for absent) turns the write into a
        compare-and-swap: a target whose content differs when it is backed up is
        a "conflict" and nothing is written.

        Crash window: POSIX has no multi-file rename. If the process dies while
        the renames run, some targets hold the new content and others the old,
        with ``.gate-*.bak`` and ``.gate-*.tmp`` files left beside them (see
        ``atomic_write``).
        """
        plan = self._plan(changes, expected_hashes or {})
        atomic_write.apply(plan, self._open_dir, _open_file)

    def _plan(self, changes: Mapping[str, bytes | None], expected: Mapping[str, str | None]) -> list[Step]:
        """Place and check every target before anything on disk changes."""
        plan: dict[str, Step] = {}
        for path, content in changes.items():
            if content is not None and not isinstance(content, (bytes, bytearray)):
                raise GateError("bad_path", f"the new content of {path} is not bytes")
            loc = self.locate(path)
            if not loc.parts:
                raise GateError("bad_path", f"{loc.key} is a root directory, not a file")
            if loc.key in plan:
                raise GateError("bad_path", f"{loc.key} is named twice")
            st = self._inspect(loc)
            if st is not None:
                _require_file(st, loc.key)
            step = Step(loc, None if content is None else bytes(content))
            if path in expected:
                step.check_hash, step.expected = True, expected[path]
            plan[loc.key] = step
        return list(plan.values())

    # --- walking --------------------------------------------------------

    def _open_root(self, index: int) -> int:
        root = self._roots[index]
        try:
            fd = os.open(root.path, _DIR_FLAGS)
        except OSError as exc:
            raise GateError("io_error", f"cannot open the root {root.path}: {exc.strerror}") from None
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (root.dev, root.ino):
            os.close(fd)
            raise GateError("outside_jail", f"the root {root.path} was replaced after the gate started")
        return fd

    def _open_dir(self, loc: Location, depth: int, made: list[tuple[int, str]] | None = None) -> int:
        """A descriptor of the directory of the first ``depth`` components. With ``made``,
        missing directories are created (and recorded as (dup of parent fd, name))."""
        fd = self._open_root(loc.root)
        try:
            for i in range(depth):
                name = loc.parts[i]
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if made is None:
                        raise GateError("not_found", f"{loc.shown(i + 1)} does not exist") from None
                    child = _make_dir(fd, name, made, loc.shown(i + 1))
                except OSError as exc:
                    raise _explain(fd, name, loc.shown(i + 1), exc, want_dir=True) from None
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _inspect(self, loc: Location) -> os.stat_result | None:
        """lstat of the final component after walking to it; None if anything is missing.
        Raises for symlinks, special files and hard links."""
        if not loc.parts:
            fd = self._open_root(loc.root)
            try:
                return os.fstat(fd)
            finally:
                os.close(fd)
        try:
            parent = self._open_dir(loc, len(loc.parts) - 1)
        except GateError as exc:
            if exc.code == "not_found":
                return None
            raise
        try:
            st = os.stat(loc.parts[-1], dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise GateError("io_error", f"cannot examine {loc.key}: {exc.strerror}") from None
        finally:
            os.close(parent)
        _check_kind(st, loc.key)
        return st

    @contextmanager
    def _open_final(self, loc: Location) -> Iterator[tuple[int, os.stat_result]]:
        """An open descriptor of the path and its fstat, checked after opening."""
        if not loc.parts:
            fd = self._open_root(loc.root)
        else:
            parent = self._open_dir(loc, len(loc.parts) - 1)
            try:
                fd = _open_checked(parent, loc.parts[-1], loc.key)
            finally:
                os.close(parent)
        try:
            yield fd, os.fstat(fd)
        finally:
            os.close(fd)


# --- helpers -------------------------------------------------------------


def _make_root(root: str | Path) -> _Root:
    real = os.path.realpath(_checked_text(root))
    for tree in SYSTEM_TREES:
        if os.path.commonpath([tree, real]) == tree:
            raise GateError("bad_path", f"the root {real} is under {tree}")
    try:
        st = os.stat(real)
    except OSError:
        raise GateError("not_found", f"the root {real} does not exist") from None
    if not stat.S_ISDIR(st.st_mode):
        raise GateError("bad_path", f"the root {real} is not a directory")
    return _Root(real, st.st_dev, st.st_ino)


def _checked_text(path: object) -> str:
    if isinstance(path, Path):
        path = str(path)
    if not isinstance(path, str):
        raise GateError("bad_path", f"a path must be text, not {type(path).__name__}")
    if not path:
        raise GateError("bad_path", "the path is empty")
    if "\0" in path:
        raise GateError("bad_path", "the path contains a NUL byte")
    try:
        size = len(path.encode("utf-8"))  # strict: no surrogates, so every name is real UTF-8 text
    except UnicodeEncodeError:
        raise GateError("bad_path", "the path is not valid UTF-8 text") from None
    if size > MAX_PATH_BYTES:
        raise GateError("bad_path", f"the path is longer than {MAX_PATH_BYTES} bytes")
    return path


def _fold(parts: list[str], *, may_leave: bool) -> list[str] | None:
    """Components with '', '.' and '..' folded away; None when '..' would leave the top
    (unless ``may_leave``, for absolute paths where '/..' is '/')."""
    out: list[str] = []
    for part in parts:
        if part in ("", "."):
            continue
        if part == "..":
            if not out:
                if may_leave:
                    continue
                return None
            out.pop()
        else:
            out.append(part)
    return out


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


def _check_kind(st: os.stat_result, shown: str) -> None:
    kind = _kind(st.st_mode)
    if kind == "symlink":
        raise GateError("symlink", f"{shown} is a symlink")
    if kind == "other":
        raise GateError("special_file", f"{shown} is not a regular file or directory (a device, fifo or socket)")
    if kind == "file" and st.st_nlink > 1:
        raise GateError("hard_link", f"{shown} has {st.st_nlink} hard links (one may be outside the workspace)")


def _require_file(st: os.stat_result, shown: str) -> None:
    _check_kind(st, shown)
    if stat.S_ISDIR(st.st_mode):
        raise GateError("bad_path", f"{shown} is a directory")


def _explain(parent: int, name: str, shown: str, exc: OSError, *, want_dir: bool) -> GateError:
    """Why opening ``name`` in ``parent`` failed, as a GateError."""
    try:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return GateError("not_found", f"{shown} does not exist")
    except OSError:
        return GateError("io_error", f"cannot open {shown}: {exc.strerror}")
    kind = _kind(st.st_mode)
    if kind == "symlink":
        return GateError("symlink", f"{shown} is a symlink")
    if want_dir and kind != "dir":
        return GateError("bad_path", f"{shown} is not a directory")
    _check_kind(st, shown)  # raises for special files and hard links
    return GateError("io_error", f"cannot open {shown}: {exc.strerror}")


def _open_checked(parent: int, name: str, shown: str) -> int:
    """Open ``name`` read-only without following it; lstat first so a device or fifo is
    refused without being opened, fstat after so a swap in between is caught too."""
    try:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        raise GateError("not_found", f"{shown} does not exist") from None
    except OSError as exc:
        raise GateError("io_error", f"cannot examine {shown}: {exc.strerror}") from None
    _check_kind(st, shown)
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=parent)
    except OSError as exc:
        raise _explain(parent, name, shown, exc, want_dir=False) from None
    try:
        _check_kind(os.fstat(fd), shown)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_file(parent: int, name: str, shown: str) -> tuple[int, os.stat_result]:
    """``_open_checked`` for a target that must be a regular file: its descriptor and fstat."""
    fd = _open_checked(parent, name, shown)
    try:
        st = os.fstat(fd)
        _require_file(st, shown)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _make_dir(parent: int, name: str, made: list[tuple[int, str]], shown: str) -> int:
    try:
        os.mkdir(name, dir_fd=parent)
    except FileExistsError:
        pass  # made by someone else meanwhile: open it with the same checks
    else:
        made.append((os.dup(parent), name))
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except OSError as exc:
        raise _explain(parent, name, shown, exc, want_dir=True) from None


def _hash_fd(fd: int) -> str:
    digest = hashlib.sha256()
    while chunk := os.read(fd, _CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks, size = [], 0
    while size < limit and (chunk := os.read(fd, min(_CHUNK, limit - size))):
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def read_regular_at(dir_fd: int, name: str, max_bytes: int) -> bytes | None:
    """The content of the regular, singly linked file ``name`` in ``dir_fd`` (opened without
    following a symlink, and without blocking on a fifo) of at most ``max_bytes``; else None."""
    return _small_regular_file(dir_fd, name, max_bytes)


def _small_regular_file(dir_fd: int, name: str, max_bytes: int) -> bytes | None:
    """The content of a regular, singly linked file of at most ``max_bytes``; else None."""
    try:
        fd = _open_checked(dir_fd, name, name)
    except GateError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        data = _read_at_most(fd, max_bytes + 1)
    finally:
        os.close(fd)
    return None if len(data) > max_bytes else data


def _too_large(shown: str, limit: int) -> GateError:
    return GateError("too_large", f"{shown} is larger than {limit} bytes")
