"""Drafts, commits, snapshots and rollbacks (meshnode/records/gate/drafts.py, snapshots.py)."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meshnode.engines.gate import GateError
from meshnode.records.gate import drafts, snapshots
from meshnode.records.gate.drafts import commit, decide, draft_delete, draft_patch, draft_write, edit, read_through, review
from meshnode.engines.gate.jail import Jail
from meshnode.store import Database

S = "session-1"
BIG = 1 << 20


@dataclass
class Setup:
    ws: Path
    db: Database
    jail: Jail

    def files(self) -> dict[str, bytes]:
        """Every file in the workspace: relative path -> content."""
        return {str(p.relative_to(self.ws)): p.read_bytes() for p in sorted(self.ws.rglob("*")) if p.is_file()}


@pytest.fixture
def env(tmp_path):
    ws = Path(os.path.realpath(tmp_path)) / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "hello.txt").write_bytes(b"hello\nworld\n")
    (ws / "src" / "a.py").write_bytes(b"x = 1\ny = 2\n")
    (ws / "old.txt").write_bytes(b"to be removed\n")
    db = Database(tmp_path / "db.sqlite")
    try:
        yield Setup(ws, db, Jail([ws]))
    finally:
        db.close()


def refused(code: str, action) -> GateError:
    with pytest.raises(GateError) as info:
        action()
    assert info.value.code == code, info.value
    return info.value


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def accept_all(env: Setup, session: str = S) -> None:
    for item in review(env.db, env.jail, session):
        decide(env.db, session, item["path"], "accept")


# --- drafting and reading through -------------------------------------------


def test_reads_in_the_session_see_drafts_and_the_real_files_stay_untouched(env):
    before = env.files()
    draft_write(env.db, env.jail, S, "hello.txt", b"drafted\n")
    draft_write(env.db, env.jail, S, "new/file.txt", b"brand new\n")
    draft_delete(env.db, env.jail, S, "old.txt")
    assert read_through(env.db, env.jail, S, "./hello.txt", BIG) == b"drafted\n"
    assert read_through(env.db, env.jail, S, "new/file.txt", BIG) == b"brand new\n"
    refused("not_found", lambda: read_through(env.db, env.jail, S, "old.txt", BIG))
    refused("too_large", lambda: read_through(env.db, env.jail, S, "hello.txt", 3))
    assert read_through(env.db, env.jail, "someone-else", "hello.txt", BIG) == b"hello\nworld\n"
    assert env.files() == before


def test_a_later_draft_updates_the_first_and_keeps_its_base_hash(env):
    first = draft_write(env.db, env.jail, S, "hello.txt", b"one\n")
    assert first["base_hash"] == sha(b"hello\nworld\n") and first["status"] == "pending"
    decide(env.db, S, "hello.txt", "accept")
    (env.ws / "hello.txt").write_bytes(b"changed by someone\n")
    second = draft_write(env.db, env.jail, S, "hello.txt", b"two\n")
    assert second["base_hash"] == first["base_hash"]
    assert second["status"] == "pending"  # new content needs a new look
    assert len(review(env.db, env.jail, S)) == 1
    new = draft_write(env.db, env.jail, S, "n.txt", b"n")
    assert new["base_hash"] is None and new["new_file"]


def test_patches_apply_to_the_drafted_content(env):
    draft_patch(env.db, env.jail, S, "src/a.py", "x = 1", "x = 10")
    draft_patch(env.db, env.jail, S, "src/a.py", "y = 2", "y = 20")
    assert read_through(env.db, env.jail, S, "src/a.py", BIG) == b"x = 10\ny = 20\n"
    assert (env.ws / "src" / "a.py").read_bytes() == b"x = 1\ny = 2\n"
    refused("patch_no_match", lambda: draft_patch(env.db, env.jail, S, "src/a.py", "z = 3", "z"))
    refused("patch_ambiguous", lambda: draft_patch(env.db, env.jail, S, "src/a.py", " = ", "="))
    refused("patch_ambiguous", lambda: draft_patch(env.db, env.jail, S, "src/a.py", "", "q"))
    refused("not_found", lambda: draft_patch(env.db, env.jail, S, "missing.py", "a", "b"))
    (env.ws / "bin.dat").write_bytes(b"\xff\xfe")
    refused("not_text", lambda: draft_patch(env.db, env.jail, S, "bin.dat", "a", "b"))
    draft_delete(env.db, env.jail, S, "src/a.py")
    refused("not_found", lambda: draft_patch(env.db, env.jail, S, "src/a.py", "x", "y"))
    refused("not_found", lambda: draft_delete(env.db, env.jail, S, "src/a.py"))


def test_drafts_go_through_the_jail(env, tmp_path):
    (env.ws / "link").symlink_to(tmp_path)
    before = env.files()
    refused("outside_jail", lambda: draft_write(env.db, env.jail, S, "../db.sqlite", b"evil"))
    refused("symlink", lambda: draft_write(env.db, env.jail, S, "link/x.txt", b"evil"))
    refused("outside_jail", lambda: read_through(env.db, env.jail, S, "/etc/passwd", BIG))
    refused("not_found", lambda: draft_delete(env.db, env.jail, S, "nothing.txt"))
    assert review(env.db, env.jail, S) == [] and env.files() == before


def test_caps_on_size_and_number(env, monkeypatch):
    refused("too_large", lambda: draft_write(env.db, env.jail, S, "big.bin", b"\0" * (drafts.MAX_DRAFT_BYTES + 1)))
    refused("bad_content", lambda: draft_write(env.db, env.jail, S, "t.txt", "text, not bytes"))
    refused("bad_session", lambda: draft_write(env.db, env.jail, "", "t.txt", b"x"))
    monkeypatch.setattr(drafts, "MAX_OPEN_DRAFTS", 3)
    for i in range(3):
        draft_write(env.db, env.jail, S, f"f{i}.txt", b"x")
    draft_write(env.db, env.jail, S, "f0.txt", b"again")  # updating is not a new draft
    refused("too_many", lambda: draft_write(env.db, env.jail, S, "f3.txt", b"x"))
    draft_write(env.db, env.jail, "other", "f3.txt", b"x")  # per session


# --- review and decisions ---------------------------------------------------


def test_review_shows_unified_diffs_and_conflicts(env):
    draft_patch(env.db, env.jail, S, "hello.txt", "world", "there")
    draft_write(env.db, env.jail, S, "new.txt", b"fresh")
    draft_delete(env.db, env.jail, S, "old.txt")
    (env.ws / "img.bin").write_bytes(b"\x89PNG")
    draft_write(env.db, env.jail, S, "img.bin", b"\xff\x00\x01")
    items = {i["path"]: i for i in review(env.db, env.jail, S)}
    assert list(items) == ["hello.txt", "img.bin", "new.txt", "old.txt"]
    hello = items["hello.txt"]
    assert hello["status"] == "pending" and not hello["conflict"]
    assert hello["diff"].splitlines() == ["--- a/hello.txt", "+++ b/hello.txt", "@@ -1,2 +1,2 @@", " hello",
                                          "-world", "+there"]
    assert items["img.bin"]["diff"] == "binary, 4 bytes -> 3 bytes"
    assert items["new.txt"]["diff"].splitlines()[:2] == ["--- /dev/null", "+++ b/new.txt"]
    assert "\\ No newline at end of file" in items["new.txt"]["diff"]
    assert items["old.txt"]["deleted"] and "-to be removed" in items["old.txt"]["diff"]
    (env.ws / "hello.txt").write_bytes(b"edited meanwhile\n")
    (env.ws / "new.txt").write_bytes(b"someone made it\n")
    items = {i["path"]: i for i in review(env.db, env.jail, S)}
    assert items["hello.txt"]["conflict"] and items["new.txt"]["conflict"] and not items["old.txt"]["conflict"]


def test_accept_reject_and_edit(env):
    draft_write(env.db, env.jail, S, "hello.txt", b"agent's\n")
    draft_write(env.db, env.jail, S, "src/a.py", b"x = 3\n")
    decide(env.db, S, "hello.txt", "accept")
    decide(env.db, S, "src/a.py", "reject")
    assert {i["path"]: i["status"] for i in review(env.db, env.jail, S)} == {"hello.txt": "accepted",
                                                                           "src/a.py": "rejected"}
    # a rejected draft is not what the session reads any more
    assert read_through(env.db, env.jail, S, "src/a.py", BIG) == b"x = 1\ny = 2\n"
    edited = edit(env.db, env.jail, S, "hello.txt", b"person's\n")
    assert edited["status"] == "accepted" and edited["size"] == 9
    assert read_through(env.db, env.jail, S, "hello.txt", BIG) == b"person's\n"
    refused("not_found", lambda: edit(env.db, env.jail, S, "old.txt", b"no draft"))
    refused("not_found", lambda: decide(env.db, S, "old.txt", "accept"))
    refused("bad_decision", lambda: decide(env.db, S, "hello.txt", "maybe"))
    snapshot_id = commit(env.db, env.jail, S, "only the accepted one")
    assert env.files()["hello.txt"] == b"person's\n" and env.files()["src/a.py"] == b"x = 1\ny = 2\n"
    assert snapshots.show(env.db, snapshot_id)["files"][0]["path"] == "hello.txt"


# --- commits ----------------------------------------------------------------


def test_commit_writes_the_accepted_drafts_and_records_a_snapshot(env):
    before = env.files()
    draft_patch(env.db, env.jail, S, "hello.txt", "world", "there")
    draft_write(env.db, env.jail, S, "new/dir/n.txt", b"n\n")
    draft_delete(env.db, env.jail, S, "old.txt")
    draft_write(env.db, env.jail, S, "pending.txt", b"not accepted\n")
    for path in ("hello.txt", "new/dir/n.txt", "old.txt"):
        decide(env.db, S, path, "accept")
    snapshot_id = commit(env.db, env.jail, S, "fix the greeting")
    after = env.files()
    assert after["hello.txt"] == b"hello\nthere\n" and after["new/dir/n.txt"] == b"n\n"
    assert "old.txt" not in after and "pending.txt" not in after
    shown = snapshots.show(env.db, snapshot_id)
    assert shown["reason"] == "fix the greeting" and shown["restored_from"] is None
    files = {f["path"]: f for f in shown["files"]}
    assert set(files) == {"hello.txt", "new/dir/n.txt", "old.txt"}
    assert files["hello.txt"]["sha256"] == sha(before["hello.txt"]) and not files["new/dir/n.txt"]["exists"]
    assert snapshots.file_contents(env.db, snapshot_id)["old.txt"] == b"to be removed\n"
    assert shown["state"]["session"] == S
    assert {d["path"]: d["status"] for d in shown["state"]["drafts"]}["pending.txt"] == "pending"
    assert [i["path"] for i in review(env.db, env.jail, S)] == ["pending.txt"]
    refused("nothing_to_commit", lambda: commit(env.db, env.jail, S, "again"))
    again = draft_write(env.db, env.jail, S, "hello.txt", b"third\n")  # a new draft after the commit
    assert again["base_hash"] == sha(b"hello\nthere\n")
    assert not [p for p in env.ws.rglob(".gate-*")]


def test_a_conflict_refuses_the_whole_commit(env):
    draft_write(env.db, env.jail, S, "hello.txt", b"mine\n")
    draft_write(env.db, env.jail, S, "src/a.py", b"x = 9\n")
    draft_write(env.db, env.jail, S, "created.txt", b"mine too\n")
    accept_all(env)
    (env.ws / "src" / "a.py").write_bytes(b"x = 1  # edited by a person\n")
    (env.ws / "created.txt").write_bytes(b"a person made this first\n")
    before = env.files()
    error = refused("conflict", lambda: commit(env.db, env.jail, S, "should not happen"))
    assert "src/a.py" in error.reason and "created.txt" in error.reason and "hello.txt" not in error.reason
    assert env.files() == before
    assert snapshots.listing(env.db) == []
    assert {i["status"] for i in review(env.db, env.jail, S)} == {"accepted"}


def test_a_change_between_the_check_and_the_write_is_still_a_conflict(env, monkeypatch):
    draft_write(env.db, env.jail, S, "hello.txt", b"mine\n")
    draft_write(env.db, env.jail, S, "src/a.py", b"x = 9\n")
    accept_all(env)
    create = snapshots.create

    def create_then_someone_edits(*args, **kwargs):
        snapshot_id = create(*args, **kwargs)
        (env.ws / "src" / "a.py").write_bytes(b"sneaky\n")
        return snapshot_id

    monkeypatch.setattr(snapshots, "create", create_then_someone_edits)
    before = {**env.files(), "src/a.py": b"sneaky\n"}
    refused("conflict", lambda: commit(env.db, env.jail, S, "raced"))
    assert env.files() == before and snapshots.listing(env.db) == []


def test_a_failure_in_the_middle_of_the_write_leaves_every_file_as_it_was(env, monkeypatch):
    draft_write(env.db, env.jail, S, "hello.txt", b"one\n")
    draft_write(env.db, env.jail, S, "src/a.py", b"two\n")
    draft_write(env.db, env.jail, S, "made/three.txt", b"three\n")
    accept_all(env)
    before = env.files()
    real_rename, calls = os.rename, []

    def rename_fails_on_the_second_file(*args, **kwargs):
        calls.append(args)
        if len(calls) == 2:
            raise OSError(5, "Input/output error")
        return real_rename(*args, **kwargs)

    monkeypatch.setattr(os, "rename", rename_fails_on_the_second_file)
    refused("io_error", lambda: commit(env.db, env.jail, S, "half"))
    assert env.files() == before
    assert not (env.ws / "made").exists() and not [p for p in env.ws.rglob(".gate-*")]
    assert snapshots.listing(env.db) == []  # the snapshot of a commit that did not happen is dropped
    assert {i["status"] for i in review(env.db, env.jail, S)} == {"accepted"}
    monkeypatch.setattr(os, "rename", real_rename)
    commit(env.db, env.jail, S, "whole")  # and it can be committed afterwards
    assert env.files()["src/a.py"] == b"two\n"


# --- snapshots and rollback ------------------------------------------------


def test_rollback_restores_and_the_rollback_can_be_rolled_back(env):
    before = env.files()
    draft_write(env.db, env.jail, S, "hello.txt", b"changed\n")
    draft_write(env.db, env.jail, S, "added/file.txt", b"added\n")
    draft_delete(env.db, env.jail, S, "old.txt")
    accept_all(env)
    committed_id = commit(env.db, env.jail, S, "the change")
    after_commit = env.files()
    assert after_commit != before
    undo_id = snapshots.restore(env.db, env.jail, committed_id)
    assert env.files() == before
    redo_id = snapshots.restore(env.db, env.jail, undo_id)
    assert env.files() == after_commit
    listed = snapshots.listing(env.db)
    assert [s["id"] for s in listed] == [redo_id, undo_id, committed_id]
    assert listed[0]["restored_from"] == undo_id and listed[1]["restored_from"] == committed_id
    assert listed[1]["paths"] == ["added/file.txt", "hello.txt", "old.txt"]
    assert isinstance(listed[0]["time"], int) and "restoring" in listed[1]["reason"]
    refused("not_found", lambda: snapshots.restore(env.db, env.jail, 999))
    refused("not_found", lambda: snapshots.show(env.db, 999))


def test_a_failed_rollback_changes_nothing_and_leaves_no_snapshot(env, monkeypatch):
    snapshot_id = snapshots.create(env.db, env.jail, ["hello.txt", "src/a.py"], {"note": "by hand"}, "manual")
    (env.ws / "hello.txt").write_bytes(b"later 1\n")
    (env.ws / "src" / "a.py").write_bytes(b"later 2\n")
    before = env.files()
    real_rename, calls = os.rename, []

    def fail_second(*args, **kwargs):
        calls.append(args)
        if len(calls) == 2:
            raise OSError(5, "Input/output error")
        return real_rename(*args, **kwargs)

    monkeypatch.setattr(os, "rename", fail_second)
    refused("io_error", lambda: snapshots.restore(env.db, env.jail, snapshot_id))
    assert env.files() == before
    assert [s["id"] for s in snapshots.listing(env.db)] == [snapshot_id]


def test_snapshot_caps_and_state(env, monkeypatch):
    sid = snapshots.create(env.db, env.jail, ["hello.txt", "./hello.txt", "nope.txt"], {"k": [1, "two"]}, "r")
    shown = snapshots.show(env.db, sid)
    assert shown["state"] == {"k": [1, "two"]}
    assert [(f["path"], f["exists"], f["size"]) for f in shown["files"]] == [("hello.txt", True, 12),
                                                                             ("nope.txt", False, None)]
    refused("bad_state", lambda: snapshots.create(env.db, env.jail, [], {"x": object()}, "r"))
    monkeypatch.setattr(snapshots, "MAX_SNAPSHOT_BYTES", 20)  # hello.txt + a.py are 24
    refused("too_large", lambda: snapshots.create(env.db, env.jail, ["hello.txt", "src/a.py"], {}, "r"))
    refused("too_large", lambda: snapshots.create(env.db, env.jail, [], {"x": "y" * 30}, "r"))
    assert len(snapshots.listing(env.db)) == 1


def test_the_migration_keeps_one_open_draft_per_file(env):
    conn = env.db.conn
    insert = ("INSERT INTO gate_drafts (session, path, base_hash, content, status, created_ms, updated_ms)"
              " VALUES ('s', 'p', NULL, x'00', ?, 0, 0)")
    conn.execute(insert, ("committed",))
    conn.execute(insert, ("committed",))
    conn.execute(insert, ("pending",))
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(insert, ("accepted",))
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(insert, ("merged",))


# --- a model of read-through ----------------------------------------------

_OPS = st.lists(st.tuples(st.sampled_from(["write", "patch", "delete", "reject"]),
                          st.sampled_from(["hello.txt", "src/a.py", "n.txt"]),
                          st.binary(max_size=8)), max_size=12)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(ops=_OPS)
def test_read_through_matches_a_model_and_never_touches_the_real_files(env, ops):
    session = uuid.uuid4().hex
    real = env.files()
    model: dict[str, bytes | None] = {}  # path -> drafted content (None: deleted); absent: no visible draft

    def seen(path: str) -> bytes | None:
        return model[path] if path in model else real.get(path)

    for op, path, data in ops:
        try:
            if op == "write":
                draft_write(env.db, env.jail, session, path, data)
                model[path] = data
            elif op == "delete":
                draft_delete(env.db, env.jail, session, path)
                model[path] = None
            elif op == "reject":
                decide(env.db, session, path, "reject")
                model.pop(path, None)
            else:
                draft_patch(env.db, env.jail, session, path, "x", "X")
                model[path] = seen(path).decode().replace("x", "X", 1).encode()
        except GateError as exc:
            assert (op, exc.code) in {("delete", "not_found"), ("reject", "not_found"), ("patch", "not_found"),
                                      ("patch", "patch_no_match"), ("patch", "patch_ambiguous"),
                                      ("patch", "not_text")}
        for p in ("hello.txt", "src/a.py", "n.txt"):
            expected = seen(p)
            if expected is None:
                refused("not_found", lambda: read_through(env.db, env.jail, session, p, BIG))
            else:
                assert read_through(env.db, env.jail, session, p, BIG) == expected
    assert env.files() == real
