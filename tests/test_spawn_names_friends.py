"""A child's name (valid, one word, never a path; free among the active children) and its friends
(the parent only, unless ``--friends`` says otherwise): issue 35, defects 8 and 9. In-process, on a
stopped parent."""

from __future__ import annotations

from pathlib import Path

import pytest

from meshnode.base.identity.keys import NodeKey
from meshnode.base.errors import SpawnError
from meshnode.engines.spawn import friends
from meshnode.engines.spawn.model import SpawnRequest, check_child_name, default_name
from meshnode.records import family
from meshnode.store.database import Database
from meshnode.store.sharing import friends as friend_dids, set_friend
from spawnlab import Parent, fake_seed, root, spawn_parent  # noqa: F401 (fixtures)


def refused(code: str, fn, *args, **kwargs) -> SpawnError:
    with pytest.raises(SpawnError) as err:
        fn(*args, **kwargs)
    assert err.value.code == code, err.value.reason
    return err.value


def test_a_name_an_active_child_has_is_refused_naming_that_child(spawn_parent):
    first = spawn_parent.spawn("newborn", name="scout")
    err = refused("name_taken", spawn_parent.spawn, "trained", name="scout")
    assert "'scout'" in err.reason and "key:" + first.did[len("did:key:z6Mk"):][:6] in err.reason
    assert "\n" not in err.reason
    assert spawn_parent.rows("SELECT name FROM children") == [("scout",)]


@pytest.mark.parametrize("bad", ["../../etc", "a/b", "/etc", ".hidden", "-rf", "a..b", "x" * 65, "", "two words",
                                 "tab\there", "é"])
def test_a_name_that_is_no_safe_word_is_refused_before_anything_is_written(spawn_parent, bad):
    place = spawn_parent.home.parent
    before = {p.name for p in place.iterdir()}
    err = refused("bad_name", spawn_parent.spawn, "newborn", name=bad)
    assert "letters, digits" in err.reason
    assert {p.name for p in place.iterdir()} == before and spawn_parent.rows("SELECT * FROM children") == []


def test_a_bundle_name_is_checked_too(spawn_parent, root):
    refused("bad_name", spawn_parent.spawn, "newborn", name="../../etc", bundle=root / "kid.tgz")
    assert not (root / "kid.tgz").exists()


def test_a_removed_childs_name_may_be_given_again_and_then_names_the_active_child(spawn_parent):
    old = spawn_parent.spawn("newborn", name="scout")
    db = Database(spawn_parent.config.db_path, create=False)
    try:
        family.mark_removed(db, old.did, 1)
    finally:
        db.close()
    new = spawn_parent.spawn("newborn", name="scout")
    db = Database(spawn_parent.config.db_path, create=False)
    try:
        assert family.child(db, "scout")["did"] == new.did != old.did
    finally:
        db.close()


def test_the_default_name_is_made_of_the_allowed_characters():
    assert default_name("Alice's node", "clone", set()) == "Alice-s-node-clone-1"
    assert default_name("...", "newborn", set()) == "node-newborn-1"
    assert default_name("a..b", "trained", {"a.b-trained-1"}) == "a.b-trained-2"


class _Friendly(Parent):
    """A stopped parent with a friend and a known stranger, seeding real."""

    def __init__(self, home: Path):
        super().__init__(home, {})
        self.friend, self.stranger = NodeKey.generate(), NodeKey.generate()
        db = Database(self.config.db_path, create=False)
        try:
            set_friend(db, self.friend.did, self.friend.peer_id, 1)
            set_friend(db, self.stranger.did, self.stranger.peer_id, 1, friend=False)
        finally:
            db.close()

    def child_friends(self, result) -> tuple[list[str], set[str]]:
        """(the child's friends, the agents it knows)."""
        db = Database(Path(result.home) / "data" / "meshnode.db", create=False)
        try:
            return friend_dids(db), {r[0] for r in db.conn.execute("SELECT id FROM agent_peers")}
        finally:
            db.close()


@pytest.fixture
def friendly(root) -> _Friendly:
    return _Friendly(root / "par")


@pytest.mark.parametrize("kind", ["trained", "clone"])
def test_a_child_has_its_parent_as_its_only_friend_and_still_knows_the_parents_friends(friendly, kind):
    r = friendly.spawn(kind)
    got, known = friendly.child_friends(r)
    assert got == [friendly.key.did]
    assert {friendly.friend.did, friendly.stranger.did} <= known  # known agents, without the Friend tag


def test_friends_inherit_and_dids_are_the_childs_friends_too(friendly):
    other = NodeKey.generate()
    got, _ = friendly.child_friends(friendly.spawn("trained", friends="inherit"))
    assert got == sorted([friendly.key.did, friendly.friend.did])
    got, known = friendly.child_friends(friendly.spawn("newborn", friends=f"{other.did}"))
    assert got == sorted([friendly.key.did, other.did]) and friendly.friend.did not in known
    theirs = [d for (d,) in friendly.rows("SELECT p.id FROM agent_peers p, json_each(p.tags) t"
                                          " WHERE t.value = 'Friend'")]  # now with the two children above
    got, _ = friendly.child_friends(friendly.spawn("clone", friends=f"inherit, {other.did}"))
    assert len(theirs) == 3 and got == sorted([friendly.key.did, *theirs, other.did])


@pytest.mark.parametrize("text", ["everyone", "did:key:nope", ",", "inherit," + "x" * 5000])
def test_friends_that_are_neither_inherit_nor_dids_are_refused(text):
    with pytest.raises(SpawnError) as err:
        friends.parse(text, "trained")
    assert err.value.code == "bad_friends"


def test_a_newborn_has_nothing_to_inherit(spawn_parent):
    refused("bad_friends", spawn_parent.spawn, "newborn", friends="inherit")
    assert spawn_parent.rows("SELECT * FROM children") == []


def test_the_friends_choice_travels_to_the_node_and_back():
    req = SpawnRequest(kind="trained", friends="inherit")
    assert SpawnRequest.from_ask({**req.to_ask(), "by": "cli"}).friends == "inherit"


# --- two spawns at once (the review of issue 35: a name checked in one read, inserted later) ----------

def test_two_spawns_at_once_never_give_one_name_to_two_children(spawn_parent, fake_seed, monkeypatch):
    """Two spawns of ``scout`` at once, as two processes run them (two `meshnode spawn` on a stopped
    parent: the lock inside one process orders nothing between them). Both pass the name check
    before either records its child (a barrier in the seeding step, which lies between the two):
    one child gets the name, the other spawn is refused and undone."""
    import contextlib
    import threading

    from meshnode.engines.spawn import service

    monkeypatch.setattr(service, "_ONE_AT_A_TIME", contextlib.nullcontext())
    both_checked = threading.Barrier(2, timeout=60)

    def seed_once_both_checked(*args, **kwargs):
        both_checked.wait()
        return fake_seed(*args, **kwargs)

    monkeypatch.setattr(service.seed, "seed_child_store", seed_once_both_checked)
    results: dict[int, object] = {}

    def spawn(i: int) -> None:
        try:
            results[i] = spawn_parent.spawn("newborn", name="scout")
        except Exception as exc:  # the refusal, looked at below
            results[i] = exc

    threads = [threading.Thread(target=spawn, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    refusals = [r for r in results.values() if isinstance(r, Exception)]
    made = [r for r in results.values() if not isinstance(r, Exception)]
    assert len(made) == 1 and len(refusals) == 1, results
    assert isinstance(refusals[0], SpawnError) and refusals[0].code == "name_taken", refusals[0]
    assert "'scout'" in refusals[0].reason and "\n" not in refusals[0].reason
    assert spawn_parent.rows("SELECT name, did FROM children") == [("scout", made[0].did)]
    homes = [p.name for p in spawn_parent.home.parent.iterdir() if p.name.startswith(("CCORE-", ".spawn-"))]
    assert homes == [Path(made[0].home).name]  # the refused one's home was undone


def test_the_migration_renames_duplicate_active_names_of_an_older_database(tmp_path):
    """A database from before the unique name (it may hold duplicates): the migration keeps the
    oldest child's name, gives each other active one its short id, and leaves removed ones alone."""
    import sqlite3

    from meshnode.store import migrate

    steps = migrate.migrations()
    at = next(i for i, (_, name, _) in enumerate(steps) if name.endswith("_children_unique_name.sql"))
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript("BEGIN;\n" + ";\n".join(sql for _, _, sql in steps[:at]) + f"\n;PRAGMA user_version = {at};"
                       "\nCOMMIT;")
    dids = [NodeKey.generate().did for _ in range(4)]
    for did, name, state, created in ((dids[0], "scout", "active", 2), (dids[1], "scout", "active", 1),
                                      (dids[2], "scout", "removed", 0), (dids[3], "x" * 64, "active", 1)):
        conn.execute("INSERT INTO children (did, peer_id, name, kind, depth, autostart, state, created_ms)"
                     " VALUES (?, 'p', ?, 'newborn', 1, 'none', ?, ?)", (did, name, state, created))
    conn.execute("INSERT INTO children (did, peer_id, name, kind, depth, autostart, state, created_ms)"
                 " VALUES (?, 'p', ?, 'newborn', 1, 'none', 'active', 3)", (dids[0] + "x", "x" * 64))
    conn.close()
    db = Database(path)
    try:
        names = dict(db.conn.execute("SELECT did, name FROM children").fetchall())
        assert names[dids[1]] == "scout" and names[dids[2]] == "scout"  # the oldest active; a removed one
        assert names[dids[0]] == "scout-" + dids[0][len("did:key:z6Mk"):][:8]
        assert names[dids[3]] == "x" * 64 and len(names[dids[0] + "x"]) == 64
        assert all(check_child_name(n) for n in names.values())
        with pytest.raises(SpawnError) as err:
            family.record_child(db, family.ChildRecord(did=NodeKey.generate().did, peer_id="p", name="scout",
                                                       kind="newborn", depth=1, autostart="none"), 5)
        assert err.value.code == "name_taken"
    finally:
        db.close()
