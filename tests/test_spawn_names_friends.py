"""A child's name (valid, one word, never a path; free among the active children) and its friends
(the parent only, unless ``--friends`` says otherwise): issue 35, defects 8 and 9. In-process, on a
stopped parent."""

from __future__ import annotations

from pathlib import Path

import pytest

from meshnode.base.identity.keys import NodeKey
from meshnode.base.errors import SpawnError
from meshnode.engines.spawn import friends
from meshnode.engines.spawn.model import SpawnRequest, default_name
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
