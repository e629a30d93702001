"""The names routes over HTTP (meshnode/faces/web/api_names.py): what every agent is called, a petname
set and forgotten as `meshnode name set|unset|list` do; the refusals with their statuses (a petname
another agent has is a conflict, 409); and a route that takes an agent takes its petname (the one
resolver, app.actions.names.agent_of)."""

from __future__ import annotations

import pytest

from meshnode.base.identity.keys import NodeKey
from meshnode.store.short_ids import short_agent_id
from webharness import refused, web_node

BOB = NodeKey(bytes([21]) * 32).did
CAROL = NodeKey(bytes([22]) * 32).did


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    with web_node(tmp_path_factory.mktemp("webnames"), name="alice") as node:
        yield node


def shown(web, did: str) -> dict:
    return next(n for n in web.get("/api/names") if n["did"] == did)


def test_names_lists_this_node_first(web):
    first = web.get("/api/names")[0]
    assert (first["did"], first["name"], first["own"]) == (web.node.did, "alice", True)
    assert web.get("/api/names") == web.node.call("names")  # the action the CLI runs


def test_a_petname_is_set_shown_taken_and_forgotten(web):
    named = web.post("/api/names", {"agent": BOB, "petname": "bob"})
    assert (named["did"], named["name"], named["petname"]) == (BOB, "bob", "bob")
    assert shown(web, BOB)["petname"] == "bob"
    reason = refused(web.raw_post("/api/names", {"agent": CAROL, "petname": "bob"}), 409, "petname_taken")
    assert "'bob'" in reason
    assert web.post("/api/names", {"agent": "bob", "petname": "Robert"})["did"] == BOB  # by its petname
    assert web.post("/api/names/unset", {"agent": "Robert"}) == {**named, "name": short_agent_id(BOB),
                                                                 "petname": None}
    refused(web.raw_post("/api/names/unset", {"agent": BOB}), 404, "not_found")  # it has none now


def test_refusals(web):
    refused(web.raw_post("/api/names", {"agent": CAROL, "petname": "did:key:z6Mkfake"}), 400, "bad_petname")
    refused(web.raw_post("/api/names", {"agent": CAROL, "petname": " carol"}), 400, "bad_petname")
    refused(web.raw_post("/api/names", {"agent": CAROL, "petname": "c" * 33}), 400, "bad_arguments")
    refused(web.raw_post("/api/names", {"agent": "nobody-known", "petname": "x"}), 400, "bad_id")
    refused(web.raw_post("/api/names", {"agent": CAROL}), 400, "bad_arguments")
    assert all(n["petname"] is None for n in web.get("/api/names"))  # nothing written by a refusal


def test_routes_taking_an_agent_take_its_petname(web):
    web.post("/api/names", {"agent": CAROL, "petname": "carol"})
    try:
        assert web.post("/api/friends", {"did": "carol"}) == {"did": CAROL, "friend": True}
        web.post("/api/reputation/carol", {"score": 0.7, "reason": "by petname"})  # faces/web/ids.agent
        assert web.get(f"/api/reputation/{CAROL}")["did"] == CAROL
        assert web.get("/api/reputation/carol")["did"] == CAROL
    finally:
        web.post("/api/friends", {"did": CAROL, "on": False})
        web.post("/api/names/unset", {"agent": CAROL})
