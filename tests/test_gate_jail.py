"""The jail (meshnode/engines/gate/jail.py): hostile paths are refused and touch nothing.

Every hostile attempt must raise a GateError with the expected code, and the
whole test tree around the workspace (a sibling sharing its name's prefix, an
"outside" directory, symlinks, hard links, a fifo) must be byte for byte the
same afterwards, as must /etc/passwd.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meshnode.engines.gate import GateError
from meshnode.engines.gate.jail import Jail


@dataclass
class Tree:
    base: Path  # everything the test made; only ws may change
    ws: Path
    sibling: Path  # base/ws2: shares the workspace's name as a prefix
    outside: Path

    def jail(self) -> Jail:
        return Jail([self.ws])


@pytest.fixture
def tree(tmp_path) -> Tree:
    base = Path(os.path.realpath(tmp_path))
    ws, sibling, outside = base / "ws", base / "ws2", base / "outside"
    for d in (ws, sibling, outside, ws / "src", ws / "sub"):
        d.mkdir()
    (sibling / "secret.txt").write_bytes(b"sibling secret\n")
    (outside / "secret.txt").write_bytes(b"top secret\n")
    (outside / "f.txt").write_bytes(b"outside f\n")
    (ws / "hello.txt").write_bytes(b"hello\n")
    (ws / "src" / "a.py").write_bytes(b"x = 1\nneedle = 2\n")
    (ws / "sub" / "f.txt").write_bytes(b"inside f\n")
    return Tree(base, ws, sibling, outside)


def fingerprint(root: Path) -> dict[str, tuple]:
    """Every entry under ``root`` (never following or opening anything but regular files),
    plus /etc/passwd."""
    seen: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in sorted(dirnames + filenames):
            full = os.path.join(dirpath, name)
            st_ = os.lstat(full)
            if stat.S_ISLNK(st_.st_mode):
                seen[full] = ("symlink", os.readlink(full))
            elif stat.S_ISREG(st_.st_mode):
                seen[full] = ("file", _sha(Path(full).read_bytes()), st_.st_mode, st_.st_nlink)
            elif stat.S_ISDIR(st_.st_mode):
                seen[full] = ("dir", st_.st_mode)
            else:
                seen[full] = ("other", stat.S_IFMT(st_.st_mode))
    seen["/etc/passwd"] = ("file", _sha(Path("/etc/passwd").read_bytes()))
    return seen


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def assert_refused(tree: Tree, code: str, action) -> GateError:
    before = fingerprint(tree.base)
    with pytest.raises(GateError) as info:
        action()
    assert info.value.code == code, info.value
    assert info.value.reason
    assert fingerprint(tree.base) == before
    return info.value


def attempts(jail: Jail, path: str):
    """Every way to reach a path: plan, read, hash, exist, list, search, write, delete."""
    return [lambda: jail.resolve(path), lambda: jail.read_bytes(path, 1 << 20), lambda: jail.file_hash(path),
            lambda: jail.exists(path), lambda: jail.write_atomically({path: b"evil\n"}),
            lambda: jail.write_atomically({"fine.txt": b"fine\n", path: b"evil\n"}),
            lambda: jail.write_atomically({path: None})]


# --- hostile paths ---------------------------------------------------------


@pytest.mark.parametrize("path", ["../outside/secret.txt", "src/../../outside/secret.txt", "..", "../ws2/secret.txt",
                                  "sub/../../ws/../outside/f.txt", "./../ws/../outside/secret.txt"])
def test_dot_dot_escapes_are_refused(tree, path):
    jail = tree.jail()
    for action in attempts(jail, path):
        assert_refused(tree, "outside_jail", action)


def test_absolute_paths_outside_and_the_prefix_sibling_are_refused(tree):
    jail = tree.jail()
    for path in ["/etc/passwd", "//etc/passwd", str(tree.sibling / "secret.txt"), str(tree.sibling),
                 str(tree.base) + "/ws2/../outside/secret.txt", str(tree.ws) + "/../outside/f.txt", "/"]:
        for action in attempts(jail, path):
            assert_refused(tree, "outside_jail", action)
    assert not (tree.ws / "fine.txt").exists()


def test_system_trees_are_refused_even_under_a_root_of_slash(tree):
    everything = Jail(["/"])
    for path in ["/proc/self/environ", "proc/self/environ", "/sys/kernel/hostname", "/dev/null", "dev/zero",
                 "/tmp/../proc/self/mem"]:
        for action in attempts(everything, path)[:4]:  # never write through a root of "/"
            assert_refused(tree, "outside_jail", action)
    jail = tree.jail()
    for path in ["/proc/self/environ", "/dev/null", "/sys/kernel/hostname"]:
        for action in attempts(jail, path):
            assert_refused(tree, "outside_jail", action)
    with pytest.raises(GateError) as info:
        Jail(["/proc/self"])
    assert info.value.code == "bad_path"


def test_a_symlink_to_etc_inside_the_workspace_is_refused(tree):
    (tree.ws / "etc").symlink_to("/etc")
    jail = tree.jail()
    for path in ["etc/passwd", "etc", "etc/new-file", str(tree.ws / "etc" / "passwd")]:
        for action in attempts(jail, path):
            error = assert_refused(tree, "symlink", action)
            assert error.reason == "etc is a symlink"


def test_a_symlink_to_a_file_outside_is_refused(tree):
    (tree.ws / "link.txt").symlink_to(tree.outside / "secret.txt")
    (tree.ws / "dangling").symlink_to(tree.outside / "not-there")
    jail = tree.jail()
    for path in ["link.txt", "dangling", "src/../link.txt"]:
        for action in attempts(jail, path):
            assert_refused(tree, "symlink", action)
    assert not jail.search("secret")  # never read through the link either
    assert {e["name"]: e["kind"] for e in jail.list_dir(".")}["link.txt"] == "symlink"


def test_a_symlink_swapped_in_after_resolve_is_refused_at_use(tree):
    jail = tree.jail()
    assert jail.resolve("sub/f.txt") == "sub/f.txt"
    assert jail.resolve("hello.txt") == "hello.txt"
    os.rename(tree.ws / "sub", tree.base / "sub-moved-away")
    (tree.ws / "sub").symlink_to(tree.outside)  # sub/f.txt now names outside/f.txt
    (tree.ws / "hello.txt").unlink()
    (tree.ws / "hello.txt").symlink_to(tree.outside / "secret.txt")
    for path in ["sub/f.txt", "hello.txt"]:
        assert_refused(tree, "symlink", lambda: jail.read_bytes(path, 1 << 20))
        assert_refused(tree, "symlink", lambda: jail.write_atomically({path: b"evil\n"}))
        assert_refused(tree, "symlink", lambda: jail.write_atomically({path: None}))
    assert_refused(tree, "symlink", lambda: jail.write_atomically({"sub/new.txt": b"evil\n"}))


def test_a_symlink_swapped_in_between_planning_and_writing_is_refused(tree, monkeypatch):
    jail = tree.jail()
    plan = jail._plan

    def plan_then_swap(*args):
        steps = plan(*args)
        os.rename(tree.ws / "sub", tree.base / "sub-moved-away")
        (tree.ws / "sub").symlink_to(tree.outside)
        return steps

    monkeypatch.setattr(jail, "_plan", plan_then_swap)
    outside_before = fingerprint(tree.outside)
    with pytest.raises(GateError) as info:
        jail.write_atomically({"hello.txt": b"changed\n", "sub/f.txt": b"evil\n"})
    assert info.value.code == "symlink"
    assert fingerprint(tree.outside) == outside_before
    assert (tree.ws / "hello.txt").read_bytes() == b"hello\n"  # all or nothing
    assert not [p for p in tree.ws.rglob(".gate-*")]


def test_a_hard_link_to_a_file_outside_is_refused(tree):
    os.link(tree.outside / "secret.txt", tree.ws / "hl.txt")
    jail = tree.jail()
    for action in attempts(jail, "hl.txt"):
        assert_refused(tree, "hard_link", action)
    assert not jail.search("secret")


def test_fifos_and_devices_are_refused_without_blocking(tree):
    os.mkfifo(tree.ws / "pipe")
    jail = tree.jail()
    for action in attempts(jail, "pipe"):
        assert_refused(tree, "special_file", action)
    assert {e["name"]: e["kind"] for e in jail.list_dir(".")}["pipe"] == "other"
    try:
        os.mknod(tree.ws / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        return  # not root: /dev/null outside the workspace is covered above
    for action in attempts(jail, "null"):
        assert_refused(tree, "special_file", action)


def test_a_fifo_swapped_in_after_the_lstat_check_is_caught_by_fstat(tree, monkeypatch):
    os.mkfifo(tree.ws / "pipe")
    real_stat = os.stat

    def lying_stat(path, *args, **kwargs):  # the pre-open check sees a regular file
        result = real_stat(path, *args, **kwargs)
        if path == "pipe":
            return os.stat_result((stat.S_IFREG | 0o644, *tuple(result)[1:10]))
        return result

    monkeypatch.setattr(os, "stat", lying_stat)
    assert_refused(tree, "special_file", lambda: tree.jail().read_bytes("pipe", 100))


@pytest.mark.parametrize("path", ["a\0b", "hello.txt\0.png", "\0", "", "x" * 256, "src/" + "y" * 256,
                                  "a/" * 2100, "\ud800"])
def test_nul_bytes_and_overlong_paths_are_bad(tree, path):
    for action in attempts(tree.jail(), path):
        assert_refused(tree, "bad_path", action)


def test_non_text_paths_are_bad(tree):
    jail = tree.jail()
    assert_refused(tree, "bad_path", lambda: jail.resolve(b"hello.txt"))
    assert_refused(tree, "bad_path", lambda: jail.read_bytes(None, 10))


def test_an_alias_of_the_workspace_through_a_symlink_is_outside(tree):
    (tree.base / "alias").symlink_to(tree.ws)
    jail = tree.jail()
    for action in attempts(jail, str(tree.base / "alias" / "hello.txt")):
        assert_refused(tree, "outside_jail", action)


def test_a_replaced_root_is_refused(tree):
    jail = tree.jail()
    os.rename(tree.ws, tree.base / "ws-old")
    (tree.base / "ws").mkdir()
    (tree.base / "ws" / "hello.txt").write_bytes(b"impostor\n")
    for action in attempts(jail, "hello.txt"):
        assert_refused(tree, "outside_jail", action)


def test_roots_must_be_existing_directories(tree):
    for root, code in [(tree.base / "nope", "not_found"), (tree.ws / "hello.txt", "bad_path")]:
        with pytest.raises(GateError) as info:
            Jail([root])
        assert info.value.code == code


# --- ordinary use ----------------------------------------------------------


def test_resolve_normalizes_to_a_key(tree):
    jail = Jail([tree.ws, tree.outside])
    assert jail.resolve("./src/../hello.txt") == "hello.txt"
    assert jail.resolve(str(tree.ws / "src" / "a.py")) == "src/a.py"
    assert jail.resolve(tree.ws) == "."
    assert jail.resolve("src//a.py/") == "src/a.py"
    assert jail.resolve("new/dir/file.txt") == "new/dir/file.txt"  # need not exist
    assert jail.resolve(str(tree.outside / "f.txt")) == str(tree.outside / "f.txt")  # another root: absolute
    assert jail.read_bytes(str(tree.outside / "f.txt"), 100) == b"outside f\n"
    with pytest.raises(GateError) as info:
        jail.resolve("hello.txt/x")
    assert info.value.code == "bad_path"


def test_reading_hashing_and_listing(tree):
    jail = tree.jail()
    assert jail.read_bytes("hello.txt", 6) == b"hello\n"
    assert_refused(tree, "too_large", lambda: jail.read_bytes("hello.txt", 5))
    assert_refused(tree, "not_found", lambda: jail.read_bytes("missing.txt", 5))
    assert_refused(tree, "not_found", lambda: jail.read_bytes("missing/x.txt", 5))
    assert_refused(tree, "bad_path", lambda: jail.read_bytes("src", 5))
    assert jail.exists("hello.txt") and jail.exists("src") and not jail.exists("missing/x.txt")
    assert jail.file_hash("hello.txt") == _sha(b"hello\n")
    assert jail.file_hash("missing.txt") is None
    listing = jail.list_dir(".")
    assert [e["name"] for e in listing] == ["hello.txt", "src", "sub"]
    assert listing[0] == {"name": "hello.txt", "kind": "file", "size": 6}
    assert listing[1]["kind"] == "dir" and listing[1]["size"] is None
    assert len(jail.list_dir(".", max_entries=2)) == 2
    assert_refused(tree, "bad_path", lambda: jail.list_dir("hello.txt"))


def test_search_finds_lines_in_regular_text_files_only(tree):
    (tree.ws / "src" / "deep").mkdir()
    (tree.ws / "src" / "deep" / "b.txt").write_bytes(b"one\nthe needle here\n")
    (tree.ws / "bin.dat").write_bytes(b"needle\0binary")
    (tree.ws / "big.txt").write_bytes(b"needle\n" + b"x" * 2000)
    (tree.ws / "src" / "outlink").symlink_to(tree.outside)
    (tree.outside / "needle.txt").write_bytes(b"needle outside\n")
    jail = tree.jail()
    found = jail.search("needle", max_file_bytes=1000)
    assert [(m["path"], m["line"]) for m in found] == [("src/a.py", 2), ("src/deep/b.txt", 2)]
    assert found[1]["text"] == "the needle here"
    assert len(jail.search("needle", max_matches=1, max_file_bytes=1000)) == 1
    assert [m["path"] for m in jail.search("needle", "src/deep")] == ["src/deep/b.txt"]
    assert_refused(tree, "bad_pattern", lambda: jail.search(""))


def test_write_atomically_creates_replaces_and_deletes(tree):
    (tree.ws / "hello.txt").chmod(0o640)
    jail = tree.jail()
    jail.write_atomically({"hello.txt": b"bye\n", "src/a.py": None, "new/deeper/c.txt": b"c\n"})
    assert (tree.ws / "hello.txt").read_bytes() == b"bye\n"
    assert stat.S_IMODE((tree.ws / "hello.txt").stat().st_mode) == 0o640
    assert not (tree.ws / "src" / "a.py").exists()
    assert (tree.ws / "new" / "deeper" / "c.txt").read_bytes() == b"c\n"
    jail.write_atomically({"missing.txt": None})  # deleting what is absent changes nothing
    assert not [p for p in tree.ws.rglob(".gate-*")]
    assert_refused(tree, "bad_path", lambda: jail.write_atomically({"hello.txt": b"1", "./hello.txt": b"2"}))
    assert_refused(tree, "bad_path", lambda: jail.write_atomically({"src": b"not a dir"}))
    assert_refused(tree, "bad_path", lambda: jail.write_atomically({".": b"root"}))


def fail_second_call(monkeypatch, name: str) -> list:
    """Make the second call of ``os.<name>`` fail as a full disk would; returns the calls."""
    real, calls = getattr(os, name), []

    def failing(*args, **kwargs):
        calls.append(args)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(os, name, failing)
    return calls


@pytest.mark.parametrize("changes, renames", [
    # rename 1 done, rename 2 fails, rename 3 puts the backup of the first back
    ({"hello.txt": b"new hello\n", "b.txt": b"new b\n", "made/dir/c.txt": b"c\n"}, 3),
    # a new file is undone by unlinking it, and "made" by rmdir
    ({"made/x.txt": b"x\n", "b.txt": b"new\n"}, 2),
    # a delete (unlink) and a replace done, the next fails: two backups go back
    ({"hello.txt": None, "b.txt": b"new b\n", "src/a.py": b"y = 2\n"}, 4),
])
def test_a_failed_rename_undoes_everything(tree, monkeypatch, changes, renames):
    (tree.ws / "b.txt").write_bytes(b"b\n")
    before = fingerprint(tree.base)
    calls = fail_second_call(monkeypatch, "rename")
    with pytest.raises(GateError) as info:
        tree.jail().write_atomically(changes)
    assert info.value.code == "io_error" and "No space left" in info.value.reason
    assert len(calls) == renames
    assert fingerprint(tree.base) == before  # contents, modes, temps, backups and made directories


def test_when_undoing_fails_too_the_backup_is_kept_and_named(tree, monkeypatch):
    (tree.ws / "b.txt").write_bytes(b"b\n")
    outside_before = fingerprint(tree.outside)
    real_rename, calls = os.rename, []

    def only_the_first_rename_works(*args, **kwargs):
        calls.append(args)
        if len(calls) > 1:
            raise OSError(5, "Input/output error")
        return real_rename(*args, **kwargs)

    monkeypatch.setattr(os, "rename", only_the_first_rename_works)
    with pytest.raises(GateError) as info:
        tree.jail().write_atomically({"hello.txt": b"new hello\n", "b.txt": b"new b\n"})
    assert info.value.code == "io_error" and "could not be undone for hello.txt" in info.value.reason
    [backup] = tree.ws.glob(".gate-*.bak")
    assert backup.read_bytes() == b"hello\n"
    assert (tree.ws / "b.txt").read_bytes() == b"b\n" and not list(tree.ws.glob(".gate-*.tmp"))
    assert fingerprint(tree.outside) == outside_before


def test_a_failed_delete_undoes_everything(tree, monkeypatch):
    (tree.ws / "b.txt").write_bytes(b"b\n")
    before = fingerprint(tree.base)
    fail_second_call(monkeypatch, "unlink")
    with pytest.raises(GateError) as info:
        tree.jail().write_atomically({"hello.txt": None, "b.txt": None, "src/a.py": b"y = 2\n"})
    assert info.value.code == "io_error"
    assert fingerprint(tree.base) == before


def test_expected_hashes_make_writing_a_compare_and_swap(tree):
    jail = tree.jail()
    stale = {"hello.txt": _sha(b"what it was before\n"), "src/a.py": jail.file_hash("src/a.py")}
    assert_refused(tree, "conflict", lambda: jail.write_atomically(
        {"src/a.py": b"y\n", "hello.txt": b"z\n"}, expected_hashes=stale))
    assert_refused(tree, "conflict", lambda: jail.write_atomically(
        {"gone.txt": b"y\n"}, expected_hashes={"gone.txt": _sha(b"it existed")}))
    assert_refused(tree, "conflict", lambda: jail.write_atomically(
        {"hello.txt": b"y\n"}, expected_hashes={"hello.txt": None}))
    jail.write_atomically({"hello.txt": b"ok\n"}, expected_hashes={"hello.txt": _sha(b"hello\n")})
    assert (tree.ws / "hello.txt").read_bytes() == b"ok\n"


# --- properties ------------------------------------------------------------

_COMPONENTS = st.sampled_from(["a", "b", "..", ".", "", "ws", "ws2", "outside", "c d"])


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(parts=st.lists(_COMPONENTS, min_size=1, max_size=8), absolute=st.booleans())
def test_random_paths_never_leave_the_workspace(tree, parts, absolute):
    for d in ("a", "b", "a/b", "b/a"):
        (tree.ws / d).mkdir(exist_ok=True)
    jail = tree.jail()
    path = "/".join(parts)
    if absolute:
        path = f"{tree.base}/{path}"
    try:
        key = jail.resolve(path)
    except GateError as exc:
        assert exc.code in ("outside_jail", "bad_path")
        if exc.code == "bad_path":
            assert path == ""
        return
    target = os.path.normpath(os.path.join(tree.ws, key))
    assert os.path.commonpath([str(tree.ws), target]) == str(tree.ws)
    assert not key.startswith("/") and ".." not in key.split("/")
    assert jail.resolve(key) == key
    assert jail.resolve(target) == key
