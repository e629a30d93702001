"""The outbound risk level (issue 12, item 17): data the agent sends out of the node waits for a
person when [gate] outbound_confirm says so. Through the agent's real cycle (a scripted LLM
over HTTP), two real nodes and the CLI; the policy's settings with the gate alone."""

from __future__ import annotations

import json

import pytest
from llmharness import command_block
from meshharness import Node, wait_until
from test_gate_session import FAST_MIND, _rows

from meshnode.base.config import load_config
from meshnode.base.errors import MeshnodeError
from meshnode.engines.gate import outbound

CAROL = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"  # a friend of alice's, never online


NO_SYNC = {"MESHNODE_NET_SYNC_SECONDS": "86400"}  # what reaches the other node now came by gossip or push


def _count(node: Node, name: str, **labels) -> float:
    return sum(m["value"] for m in node.call("metrics") if m["name"] == name and labels.items() <= m["labels"].items())


def test_a_public_note_and_a_message_to_a_stranger_wait_for_a_person(tmp_path, llms):
    """...and once approved, the public note is gossiped at once (app.actions.notes, the same action
    as the person's `note add`), the message pushed; alice's record says the agent asked and the
    person approved through the CLI."""
    bob = Node(tmp_path, "bob", env={**FAST_MIND, **NO_SYNC})
    alice = Node(tmp_path, "alice", env={**FAST_MIND, **NO_SYNC})
    llm = llms("main", [
        "Time to share. " + command_block(
            {"cmd_id": "pub", "type": "note_add", "args": {"text": "my plan, for everyone", "audience": "public"}},
            {"cmd_id": "fr", "type": "note_add", "args": {"text": "my plan, for friends", "audience": "friends"}},
            {"cmd_id": "own", "type": "note_add", "args": {"text": "a reminder to myself"}},
            {"cmd_id": "msg", "type": "send_message", "args": {"to": bob.did, "text": "hello bob, from alice"}}),
        "Shared what I could; waiting for the answers now.",
    ])
    try:
        bob.start()
        alice.set_bootstrap(bob)
        alice.cli("friend", "add", CAROL)  # bob is not a friend
        alice.cli("llm", "add", "main", "--url", llm.url, "--model", "m")
        alice.start()
        asked = wait_until(lambda: json.loads(alice.cli("confirm", "list", "--json")) if len(
            json.loads(alice.cli("confirm", "list", "--json"))) == 2 else None, 60, "two confirmation requests")
        by_tool = {r["tool"]: r for r in asked}
        assert by_tool["note_add"]["args"]["audience"] == "public" and by_tool["note_add"]["risk"] == "outbound"
        assert by_tool["send_message"]["args"]["to"] == bob.did and "not a friend" in by_tool["send_message"]["reason"]
        # what stays home, or goes to friends, did not wait; the public note is not written yet
        audiences = [a for (a,) in _rows(alice, "SELECT audience FROM notes WHERE source = 'llm'")]
        assert sorted(audiences) == ["friends", "private"]
        results = {n[4:]: json.loads(v) for n, v in _rows(alice, "SELECT name, value FROM process_log"
                                                          " WHERE name IN ('cmd:pub', 'cmd:msg')")}
        assert results["pub"]["result"]["status"] == "needs_confirmation"
        assert results["msg"]["result"]["status"] == "needs_confirmation"
        assert any("meshnode confirm approve" in n["text"] and "send_message" in n["text"]
                   for n in alice.call("notes"))  # the person was asked

        alice.cli("confirm", "approve", str(by_tool["send_message"]["id"]))
        alice.cli("confirm", "approve", str(by_tool["note_add"]["id"]))
        wait_until(lambda: any(n["text"] == "hello bob, from alice" for n in (bob.try_call("notes") or [])), 60,
                   "bob to get the approved message")
        wait_until(lambda: {r["status"] for r in json.loads(alice.cli("confirm", "list", "--all", "--json"))}
                   == {"done"}, 60, "both approved sends to run")
        assert _rows(alice, "SELECT text, source FROM notes WHERE audience = 'public'") == [
            ("my plan, for everyone", "llm")]
        assert _rows(alice, "SELECT p.kind, p.via, p.approved_kind, p.approved_via FROM notes n JOIN provenance p"
                            " ON p.container_did = n.container_did WHERE n.audience = 'public'") == [
            ("agent", "cycle", "person", "cli")]
        # bob, who syncs once a day, holds the approved public note: gossip carried it
        wait_until(lambda: any(n["text"] == "my plan, for everyone" for n in (bob.try_call("notes") or [])), 60,
                   "bob to get the approved public note by gossip")
        assert _count(bob, "gossip_delivered", cls="note") == 1  # alice's one public note
    finally:
        alice.kill()
        bob.kill()


async def test_the_outbound_policy_is_configurable(lab):
    stranger = CAROL
    asks_all = lab["make"](outbound_confirm=outbound.confirm_policy(list(outbound.KINDS)))
    asks_none = lab["make"](outbound_confirm=outbound.confirm_policy([]))
    for args in ({"text": "x", "audience": "friends"}, {"text": "x", "audience": "public"}):
        assert (await asks_all.outbound("note_add", args))["status"] == "needs_confirmation"
        assert await asks_none.outbound("note_add", args) is None
    assert (await asks_all.outbound("send_message", {"to": stranger, "text": "x"}))["status"] == "needs_confirmation"
    assert await asks_none.outbound("send_message", {"to": stranger, "text": "x"}) is None
    assert await asks_all.outbound("note_add", {"text": "x"}) is None  # a private note never leaves
    assert outbound.kind("send_message", {"to": stranger}, {stranger}) == "friend"


def test_outbound_confirm_is_checked_at_load(tmp_path):
    (tmp_path / "config.toml").write_text('[gate]\noutbound_confirm = ["public", "everyone"]\n')
    with pytest.raises(MeshnodeError) as info:
        load_config(tmp_path)
    assert "everyone" in info.value.reason and "stranger" in info.value.reason
    (tmp_path / "config.toml").write_text('[gate]\noutbound_confirm = []\n')
    assert load_config(tmp_path).values["gate"]["outbound_confirm"] == []
