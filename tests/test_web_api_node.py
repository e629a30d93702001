"""The node and mesh routes over HTTP (meshnode/faces/web/api_node.py): a web node and one plain peer that
bootstraps to it; each route answers what the control command (the CLI's path) answers."""

from __future__ import annotations


import pytest

from meshharness import Node, wait_until
from webharness import WebNode, refused


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    root = tmp_path_factory.mktemp("webnode")
    web = WebNode(root, "web")
    peer = Node(root, "peer")
    try:
        peer.set_bootstrap(web.node, address_filter="/ip4/127.0.0.1/")
        peer.start()
        yield web, peer
    finally:
        peer.stop()
        web.stop()


def connected(web: WebNode, did: str, name: str) -> bool:
    """The peer is connected and has told its name (the routes below take the name)."""
    return any(p["did"] == did and p["connected"] and p["name"] == name for p in web.get("/api/peers"))


def test_status_is_the_control_status(nodes):
    web, _ = nodes
    status = web.get("/api/status")
    assert status["did"] == web.node.did and status["name"] == "web" and status["running"] is True
    live = web.node.call("status")
    assert {k: status[k] for k in ("did", "peer_id", "home", "schema_version")} == \
        {k: live[k] for k in ("did", "peer_id", "home", "schema_version")}
    assert set(status["counts"]) >= {"containers", "notes"}
    full = web.get("/api/metrics.json")
    assert {"counters", "histograms", "gauges"} <= set(full)
    names = {m["name"] for m in full["counters"]}
    assert "control_requests" in names


def test_peer_routes_take_a_name_as_the_cli_does(nodes):
    web, peer = nodes
    wait_until(lambda: connected(web, peer.did, "peer"), 30, "the peer connected and named")
    assert web.post("/api/peers/ping", {"did": "peer"})["did"] == peer.did  # by name
    assert web.post("/api/peers/ping", {"did": peer.did})["rtt_ms"] >= 0
    found = web.get("/api/find", did=peer.did)
    assert found["did"] == peer.did and found["connected"] is True
    assert web.post("/api/friends", {"did": "peer"}) == {"did": peer.did, "friend": True}
    assert web.get("/api/friends") == [peer.did] == web.node.call("friends")
    assert web.post("/api/friends", {"did": peer.did, "on": False})["friend"] is False
    assert web.get("/api/friends") == []
    synced = web.post("/api/sync", {"did": peer.did})
    assert {"pushed", "fetched"} <= set(synced)


def test_find_takes_one_of_did_or_interest(nodes):
    web, _ = nodes
    for params in ({}, {"did": "peer", "interest": "chemistry"}):
        r = web.raw_get("/api/find", **params)
        refused(r, 400, "bad_arguments")


def test_a_container_is_shown_as_bytes_and_decoded(nodes):
    web, _ = nodes
    did = web.post("/api/notes", {"text": "a note to look at"})["did"]
    shown = web.get(f"/api/containers/{did[len('did:hmp:container:uEi'):][:10]}")  # the short id resolves
    assert shown["did"] == did and shown["problem"] is None
    assert bytes.fromhex(shown["hex"]) == bytes.fromhex(web.node.call("export", {"did": did})["hex"])
    assert shown["container"]["verified"]["container_did"] == did
    assert shown["container"]["hmp_container"]["payload"]["text"] == "a note to look at"
    missing = web.raw_get("/api/containers/did:hmp:container:uEi" + "A" * 44)
    refused(missing, 404, "not_found")
    unknown = web.raw_get("/api/containers/Zzzzzzzzzz")
    refused(unknown, 404, "not_found")


def test_reputation_is_set_and_read_as_the_cli_does(nodes):
    web, peer = nodes
    wait_until(lambda: connected(web, peer.did, "peer"), 30, "the peer connected and named")
    assert web.post("/api/reputation/peer", {"score": 0.9, "reason": "I know its operator"}) == \
        {"did": peer.did, "score": 0.9, "capped": False}
    row = next(r for r in web.get("/api/reputation") if r["did"] == peer.did)
    assert row["score"] == pytest.approx(0.9, abs=0.05)  # observations of the live peer move it a little
    detail = web.get(f"/api/reputation/{peer.did}")
    assert detail["counts"].get("person_set") == 1
    shown = web.cli_json("reputation", "show", peer.did)  # the mesh may add evidence meanwhile
    assert shown["did"] == detail["did"] and shown["counts"]["person_set"] == 1
    refused(web.raw_post(f"/api/reputation/{web.node.did}", {"score": 0.5}), 400, "bad_did")
    assert set(web.post("/api/reputation/round")) == {"published", "withheld", "peers"}


def test_ethics_policies(nodes):
    web, _ = nodes
    assert web.post("/api/ethics", {"name": "privacy", "principles": ["ask before sharing"]}) == \
        {"name": "privacy", "principles": 1, "set_by": "person"}
    assert web.get("/api/ethics") == web.cli_json("ethics", "list")
    again = web.raw_post("/api/ethics", {"name": "privacy", "principles": ["x"]})
    refused(again, 409, "duplicate")
    assert web.post("/api/ethics/privacy/remove") == {"removed": "privacy"}
    assert web.get("/api/ethics") == []
    gone = web.raw_post("/api/ethics/privacy/remove")
    refused(gone, 404, "not_found")


def test_votes_and_consensus(nodes):
    web, _ = nodes
    did = web.post("/api/notes", {"text": "a proposal"})["did"]
    web.node.cli("consensus", "vote", did, "--value", "1")
    tally = web.get(f"/api/votes/{did}", min_voters=1, min_trust=0)
    cli = web.cli_json("consensus", "status", did, "--min-voters", "1", "--min-trust", "0")
    same = ("target_did", "decision", "rule", "state", "voters", "trust_sum", "excluded")  # not the decay: time moved
    assert {k: tally[k] for k in same} == {k: cli[k] for k in same}
    assert [v["vote"] for v in tally["votes"]] == [v["vote"] for v in cli["votes"]] and len(tally["votes"]) == 1
    assert web.get("/api/consensus")["enabled"] is False  # no committee configured
    assert web.get("/api/consensus/decisions") == []
