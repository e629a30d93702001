"""store.hooks: the store runs GMP admission and views only through hooks the gmp package registers,
and a store without them stores nothing."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from gmp_fixtures import A, M, T0, World

from meshnode.base.errors import StoreError
from meshnode.domain.gmp.rules import GmpRefused
from meshnode.records.gmp.store_hooks import HOOKS, GmpStoreHooks, install
from meshnode.domain.notes import make_note
from meshnode.store import Database
from meshnode.store.hooks import StoreHooks

STORE = Path(__file__).resolve().parents[1] / "meshnode" / "store"


def test_a_store_without_gmp_hooks_stores_nothing(tmp_path):
    """It opens and reads (init, read-only commands), but refuses every container, a note too:
    each stored container is shown to the hooks (a pending GMP container may wait for it)."""
    db = Database(tmp_path / "bare.db", hooks=StoreHooks())
    try:
        for write in (lambda: db.put_container(make_note(A, "hello", now_ms=T0), received_at_ms=T0),
                      db.rebuild_views):
            with pytest.raises(StoreError) as err:
                write()
            assert err.value.code == "no_store_hooks"
            assert "goal 1.1, task 1.1, workflow_entry 1.1" in err.value.reason
            assert "meshnode.records.gmp.store_hooks.install()" in err.value.reason
        assert db.counts()["containers"] == 0
    finally:
        db.close()


def test_hooks_given_to_one_database_admit_and_draw(tmp_path):
    """Hooks of its own (not the process default): a task waiting for its goal is held, then
    released and drawn when the goal arrives; a forged version is refused."""
    w = World()
    goal = w.goal()
    task = w.task(goal)
    db = Database(tmp_path / "own.db", hooks=install(StoreHooks()))
    try:
        assert db.put_container(task, received_at_ms=T0) is False  # pending: its goal is not here
        assert db.put_container(goal, received_at_ms=T0) is True
        assert db.conn.execute("SELECT lineage FROM tasks").fetchone() == (task.did,)
        forged = w.task(goal, key=M, status="abandoned", previous=(task,))  # an outsider's version
        with pytest.raises(GmpRefused):
            db.put_container(forged, received_at_ms=T0)
    finally:
        db.close()


def test_registering_is_idempotent_and_a_class_has_one_owner():
    hooks = StoreHooks()
    assert install(hooks) is hooks and install(hooks) is hooks
    assert list(hooks) == [HOOKS]
    with pytest.raises(ValueError):
        hooks.register(GmpStoreHooks())  # another object for the same classes


def test_the_store_imports_no_gmp_module():
    for path in sorted(STORE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n.startswith("meshnode.domain.gmp") for n in names), f"{path.name} imports {names}"
