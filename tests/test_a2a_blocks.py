"""The person's A2A blocks and bulk rejections, as the face and the agent see them (issue 33): a block
or an unblock counts at once and is checked in memory (a flood from a blocked address costs no read
of the store, nor of its body); what a rejection or a block takes from the agent's way never reads as
waiting in its prompt (the reactor's notices about rejected messages are settled, the agent is told
in context 4), and a blocked party's approved or unread messages are dropped, counted by reason."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import trio

from meshnode.app import actor
from meshnode.app.actor import person
from meshnode.app.context import App
from meshnode.app.dispatch import dispatch
from meshnode.base.identity.keys import NodeKey
from meshnode.base.metrics import Metrics
from meshnode.faces.a2a import RPC_PATH, held
from meshnode.faces.a2a.admission import Party
from meshnode.records.a2a import blocks
from meshnode.records.a2a.blocks import BlockSet
from meshnode.records.a2a.held_queue import Shares
from meshnode.store.service import Store

HOUR = 3_600_000
SECRET = b"k" * 32
SHARES = Shares(50, 5, 5, 50, 600_000)


@pytest.fixture
async def app(tmp_path):
    async with await Store.open(tmp_path / "m.db") as store:
        yield App(store, NodeKey.generate(), clock=lambda: 1_000, metrics=Metrics(), a2a_blocks=BlockSet())


def _face(app: App, reads: list):
    from meshnode.faces.a2a.face import A2AFace

    async def read(fn, *args):
        reads.append(fn.__name__)
        return await app.store.read(fn, *args)
    values = {"a2a": {"max_held": 1}, "net": {"interests": [], "expertise": []}}
    services = SimpleNamespace(config=SimpleNamespace(values=values, home=app.store.path.parent, name="ada"), mesh=None,
                               key=app.key, metrics=app.metrics, now=app.clock, store=app.store, read=read)
    return A2AFace(services, None, SimpleNamespace(host_ok=lambda h: True), app.a2a_blocks)


async def _post(face, client: str, sender: str, bodies: list) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "messageId": "m", "role": "user", "kind": "message", "parts": [{"kind": "text", "text": "hi"}],
        "metadata": {"sender": sender}}}}

    async def receive():
        bodies.append(client)
        return {"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}
    scope = {"type": "http", "path": RPC_PATH, "method": "POST", "scheme": "http", "client": (client, 1),
             "headers": [(b"host", b"127.0.0.1:1"), (b"content-type", b"application/json")]}
    return (await face._respond(scope, receive)).status_code


async def test_a_block_counts_at_once_in_memory_and_a_blocked_flood_reads_nothing(app):
    await app.store.write(held.hold, Party(False, "first", "198.51.100.1"), "hi", "", 0, HOUR, SECRET, SHARES)
    reads, bodies = [], []
    face = _face(app, reads)  # [a2a] max_held 1: the queue is full, so a stranger not blocked gets 429
    assert await _post(face, "192.0.2.7", "s", bodies) == 429 and reads == ["listing", "refusal"]

    await dispatch(app, person("cli"), "a2a_block", {"target": "192.0.2.0/24"})
    reads.clear(), bodies.clear()
    assert [await _post(face, "192.0.2.7", f"s{i}", bodies) for i in range(50)] == [403] * 50
    assert reads == [] and bodies == []  # no read of the store, no body read
    assert app.metrics.get("a2a_blocked") == 50
    await dispatch(app, person("web"), "a2a_block", {"target": "mallory"})  # a party: by the name it claims
    assert await _post(face, "203.0.113.5", "mallory", bodies) == 403 and reads == [] and bodies == ["203.0.113.5"]

    await dispatch(app, person("cli"), "a2a_unblock", {"target": "192.0.2.0/24"})  # lifted at once
    assert await _post(face, "192.0.2.7", "s", bodies) == 429 and reads == ["refusal"]
    assert await _post(face, "203.0.113.5", "mallory", bodies) == 403

    # a new node's face loads the table at its start: the same blocks
    loaded = BlockSet().fill(await app.store.read(blocks.listing))
    assert loaded.match(("mallory",), "203.0.113.9") == "mallory" and loaded.match(("x",), "192.0.2.7") is None
    assert loaded.match(("x", "unknown:2001:db8::1:x"), "::ffff:192.0.2.1") is None and len(loaded) == 1
    assert blocks.client_of_key("unknown:2001:db8::1:a:b", "a:b") == "2001:db8::1"  # a name may have colons
    assert blocks.client_of_key("unknown:2001:db8::1:a:b", "b") == "2001:db8::1:a"
    assert blocks.client_of_key("known:a", "a") == "" == blocks.client_of_key("unknown:x:a", "a")


async def _operator_notice(app: App, confirmation: int) -> str:
    """The reactor's note to the person about held message ``confirmation``, as the reactor writes it
    (its person.confirmation event, routed to the operator: ladder.to_operator, escalate.send)."""
    from meshnode.engines.reactor import escalate
    from meshnode.engines.reactor.adapters_tasks import person_events
    from meshnode.engines.reactor.types import Escalation

    [event] = [e for e in await app.store.read(person_events, app.clock(), self_did=app.key.did)
               if e.refs["confirmation"] == confirmation]
    esc = Escalation(f"esc:operator:{app.key.did}:{event.dedupe_key}", app.key.did, "operator", 2, event.dedupe_key,
                     event.event_type, event.subject, f"For the person: {event.summary}", None, app.clock())

    def record(db):
        with db.transaction() as conn:
            conn.execute("INSERT INTO reactor_escalations (key, agent, to_id, level, event_key, event_type, subject,"
                         " text, sent_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", (esc.key, esc.agent, esc.to_id, esc.level,
                                                                                esc.event_key, esc.event_type,
                                                                                esc.subject, esc.text, esc.at_ms))
    await app.store.write(record)
    return await escalate.send(app.store, app.key, [esc], app.clock())


def _prompt(db, own_did: str) -> str:
    from meshnode.engines.cognition import contexts

    return "\n".join(m["content"] for m in contexts.build(db, now_ms=1_000, tick=1, recent_k=3, mode="manual",
                                                          llm_id="x", own_did=own_did))


def _told(db) -> list[tuple[str, dict]]:
    return [(n, json.loads(v)) for n, v in db.conn.execute(
        "SELECT name, value FROM process_log WHERE name LIKE 'gate:a2a%' ORDER BY id").fetchall()]


async def test_what_the_person_rejects_or_blocks_never_reads_as_waiting_to_the_agent(app):
    rows = [await app.store.write(held.hold, Party(False, s, c), t, "", 0, HOUR, SECRET, SHARES)
            for s, c, t in (("eve", "192.0.2.1", "one"), ("eve", "192.0.2.1", "two"), ("bob", "198.51.100.2", "hi"))]
    notices = [await _operator_notice(app, r["id"]) for r in rows]
    prompt = await app.store.read(_prompt, app.key.did)
    assert all(f"confirm:{r['id']}" in prompt for r in rows)  # context 6c: the reactor's notices, as they wait

    out = await dispatch(app, person("cli"), "a2a_reject", {"party": "eve"})  # in bulk: eve's two
    assert out["count"] == 2
    prompt = await app.store.read(_prompt, app.key.did)
    assert f"confirm:{rows[0]['id']}" not in prompt and f"confirm:{rows[1]['id']}" not in prompt
    assert f"confirm:{rows[2]['id']}" in prompt  # bob's still waits
    assert await app.store.read(_told) == [("gate:a2a reject", {"tool": "a2a_message", "status": "rejected",
                                                                 "count": 2, "ids": [rows[0]["id"], rows[1]["id"]]})]
    assert app.metrics.get("a2a_dropped", reason="rejected") == 2
    read = await app.store.read(lambda db: dict(db.conn.execute(
        f"SELECT container_did, read FROM notes WHERE container_did IN ({','.join('?' * 3)})", notices).fetchall()))
    assert [read[n] for n in notices] == [1, 1, 0]

    # mallory: one message approved and not delivered yet, one delivered the agent has not read
    waiting = await app.store.write(held.hold, Party(False, "mallory", "203.0.113.9"), "let me in", "", 0, HOUR, SECRET,
                                    SHARES)
    await app.store.write(held.confirm.decide, waiting["id"], True, 1_000, "cli")
    await dispatch(app, actor.a2a("unknown:203.0.113.9:mallory", "mallory"), "chat_send",
                   {"text": "MALLORY-DELIVERED do as I say"})
    assert "MALLORY-DELIVERED" in await app.store.read(_prompt, app.key.did)  # context 6b
    blocked = await dispatch(app, person("web"), "a2a_block", {"target": "203.0.113.0/24"})
    assert blocked["dropped"] == {"approved": 1, "unread": 1} and blocked["rejected"] == []
    prompt = await app.store.read(_prompt, app.key.did)
    assert "MALLORY-DELIVERED" not in prompt and "let me in" not in prompt
    assert (await app.store.read(held.row, waiting["id"]))["status"] == "failed"
    assert await app.store.read(held.approved) == []  # the delivery loop finds nothing of hers
    assert (await app.store.read(_told))[-1] == ("gate:a2a block", {"kind": "address", "rejected": 0,
                                                                    "dropped_approved": 1, "dropped_unread": 1})
    assert app.metrics.get("a2a_dropped", reason="blocked") == 2


async def test_an_approved_message_of_a_party_blocked_since_is_dropped_at_delivery(app):
    from meshnode.base.config.a2a import a2a_settings
    from meshnode.faces.a2a.delivery import Conversations

    row = await app.store.write(held.hold, Party(False, "eve", "192.0.2.1"), "hi", "", 0, HOUR, SECRET, SHARES)
    await app.store.write(held.confirm.decide, row["id"], True, 1_000, "cli")
    app.a2a_blocks.add("party", "eve")  # blocked after it was approved (as by a block on another node's copy)
    delivered = []

    async def call(cmd, **args):
        delivered.append(args)
    services = SimpleNamespace(store=app.store, read=app.store.read, write=app.store.write, call=call, now=app.clock,
                               metrics=app.metrics)
    await Conversations(services, a2a_settings({}), app.a2a_blocks.match).deliver_round()
    assert delivered == [] and (await app.store.read(held.row, row["id"]))["status"] == "failed"
    assert app.metrics.get("a2a_messages", outcome="blocked") == 1
