"""A node's family over HTTP (meshnode/faces/web/api_spawn.py): spawn a child, see it in the list and
alone, remove it; the refusals (an unknown kind, a child that is not one, the limit)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spawnlab import short_root, stop_child
from webharness import refused, web_node


@pytest.fixture(scope="module")
def web():
    with short_root() as root, web_node(root, env={"MESHNODE_SPAWN_MAX_CHILDREN": "1"}) as node:
        homes: list[Path] = []
        node.homes = homes
        try:
            yield node
        finally:
            for home in homes:
                stop_child(home)


def test_spawn_list_show_and_remove_a_child(web):
    child = web.post("/api/spawn", {"kind": "newborn", "name": "webkid", "start": False})
    web.homes.append(Path(child["home"]))
    assert child["name"] == "webkid" and child["kind"] == "newborn" and child["depth"] == 1
    assert child["did"].startswith("did:key:") and Path(child["home"], "config.toml").exists()
    listed = web.get("/api/children")
    assert [(c["did"], c["name"], c["state"]) for c in listed] == [(child["did"], "webkid", "active")]
    shown = web.get(f"/api/children/{child['did']}")
    assert shown["home"] == child["home"] and shown["kind"] == "newborn" and "seed_report" in shown
    assert web.get("/api/children/webkid")["did"] == child["did"]  # by name, as the CLI takes it
    refused(web.raw_post("/api/spawn", {"kind": "trained"}), 409, "too_many_children")  # [spawn] max_children 1
    removed = web.post(f"/api/children/{child['did']}/remove")
    assert removed["state"] == "removed"
    assert web.get("/api/children") == [] and len(web.get("/api/children", all="true")) == 1
    assert Path(child["home"]).exists()  # the home stays: deleting it is the CLI's --delete-home


def test_refusals(web):
    refused(web.raw_post("/api/spawn", {"kind": "twin"}), 400, "bad_arguments")
    refused(web.raw_post("/api/spawn", {"kind": "newborn", "home": "/etc"}), 400, "bad_arguments")  # not from a browser
    refused(web.raw_post("/api/spawn", {"kind": "newborn", "name": "x" * 65}), 400, "bad_arguments")
    refused(web.raw_get("/api/children/key:nobody00"), 404, "not_a_child")
    refused(web.raw_get("/api/spawn/nojob"), 404, "not_found")


def test_friends_is_spawn_friends(web):
    """``friends`` as ``meshnode spawn --friends`` takes it: the same validator (spawn.friends.parse),
    and the DIDs it names are the child's friends beside its parent."""
    from meshnode.base.identity.keys import NodeKey
    from meshnode.store import Database
    from meshnode.store.sharing import friends

    refused(web.raw_post("/api/spawn", {"kind": "newborn", "friends": "inherit", "start": False}), 400, "bad_friends")
    refused(web.raw_post("/api/spawn", {"kind": "newborn", "friends": "bob", "start": False}), 400, "bad_friends")
    refused(web.raw_post("/api/spawn", {"kind": "newborn", "friends": "x" * 4097}), 400, "bad_arguments")
    assert web.get("/api/children") == []  # nothing made by a refusal
    other = NodeKey.generate().did
    child = web.post("/api/spawn", {"kind": "newborn", "name": "webfriend", "start": False, "friends": other})
    web.homes.append(Path(child["home"]))
    db = Database(Path(child["home"], "data", "meshnode.db"))
    try:
        assert sorted(friends(db)) == sorted([web.node.did, other])
    finally:
        db.close()
    # a name an active child has is a conflict (409), before the family's size is counted
    refused(web.raw_post("/api/spawn", {"kind": "newborn", "name": "webfriend", "start": False}), 409, "name_taken")
    web.post(f"/api/children/{child['did']}/remove")
