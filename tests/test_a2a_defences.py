"""The A2A face's defences (protocols/a2a.md sections 2 and 4): held tasks only for their sender, the
card signed only for a URL the node vouches for, the held queue's cap, limits before the body, the
shutdown of a delivery, a child's own settings and the count of messages by outcome."""

from __future__ import annotations

import json

import pytest
import trio
from a2a.types import TaskState

from meshnode.faces.a2a import card as cards
from meshnode.base.identity.keys import NodeKey


def _shares(n: int):
    """The held queue's shares with every one ``n`` (the whole queue's, each party's, address's, subnet's)."""
    from meshnode.records.a2a.held_queue import Shares

    return Shares(total=n, per_party=n, per_address=n, per_subnet=n, retry_after_ms=600_000)


def test_a_trusted_proxy_names_the_client_and_ipv6_addresses_share_their_64():
    from meshnode.faces.a2a.admission import bucket_of, client_of

    proxy = frozenset({"127.0.0.1"})
    assert client_of("127.0.0.1", "198.51.100.1, 203.0.113.7", proxy) == "203.0.113.7"  # the proxy's own hop
    assert client_of("192.0.2.5", "203.0.113.7", proxy) == "192.0.2.5"  # anyone else's header: ignored
    assert client_of("127.0.0.1", "not-an-ip", proxy) == "127.0.0.1" and client_of("127.0.0.1", None, proxy)
    assert bucket_of("2001:db8:1:2:aaaa::1") == bucket_of("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert bucket_of("2001:db8:1:3::1") != bucket_of("2001:db8:1:2::1")
    assert bucket_of("192.0.2.5") == "192.0.2.5" and bucket_of("::ffff:192.0.2.5") == "192.0.2.5"


def _face(tmp_path, listen_host: str, hosts: list[str], public_url: str = ""):
    from types import SimpleNamespace

    from meshnode.faces.a2a.face import A2AFace

    values = {"a2a": {"public_url": public_url}, "net": {"interests": ["ml"], "expertise": []}}
    services = SimpleNamespace(config=SimpleNamespace(values=values, home=tmp_path, name="ada"), mesh=None,
                               key=NodeKey.generate(), metrics=None, now=lambda: 0, store=None)
    return A2AFace(services, None, SimpleNamespace(listen_host=listen_host, hosts=hosts))


def test_the_card_is_signed_only_for_a_url_the_node_vouches_for(tmp_path):
    """On a wildcard listener any IP literal passes the Host check: a card signed for Host: <attacker's
    address> would let the attacker re-host it and catch known parties' tokens. It is served unsigned."""
    from meshnode.faces.a2a.face import vouched_host

    face = _face(tmp_path, "0.0.0.0", ["agent.example"])
    did = face.services.key.did
    for host, signed in (("203.0.113.9:8080", False), ("127.0.0.1:8080", True), ("localhost:8080", True),
                         ("agent.example", True), ("agent.example:8080", True)):
        scope = {"type": "http", "path": cards.CARD_PATH, "method": "GET", "scheme": "http",
                 "headers": [(b"host", host.encode())]}
        face.guard.host_ok = lambda h: True
        served = json.loads(trio.run(face._respond, scope, None).body)
        assert bool(served.get("signatures")) == signed, host
        assert ("[unsigned" in served["description"]) == (not signed)
        if signed:
            assert cards.verify_card(served, did).name == "ada"
        else:
            with pytest.raises(cards.CardError):
                cards.verify_card(served, did)
    assert vouched_host("192.0.2.1:80", "192.0.2.1", []) and not vouched_host("192.0.2.2:80", "::", [])
    # with [a2a] public_url the URL is the node's own whatever the Host: signed
    configured = _face(tmp_path, "0.0.0.0", [], "https://agent.example")
    assert configured.card("http://203.0.113.9:1", vouched=False)["signatures"]


def test_held_messages_are_capped_and_their_task_ids_need_the_nonce(tmp_path):

    from meshnode.faces.a2a import held
    from meshnode.faces.a2a.admission import Party
    from meshnode.store.database import Database

    db = Database(tmp_path / "db.sqlite")
    hour = 3600 * 1000
    rows = [held.hold(db, Party(False, f"s{i}", f"2001:db8::{i}"), "hi", "", 0, hour, b"k" * 32, _shares(3))
            for i in range(3)]
    assert all(rows) and held.pending(db, 0) == 3
    assert held.hold(db, Party(False, "s9", "2001:db8::9"), "hi", "", 0, hour, b"k" * 32, _shares(3)) is None  # full
    again = held.hold(db, Party(False, "s0", "2001:db8::0"), "hi", "", 0, hour, b"k" * 32, _shares(3))
    assert again["id"] == rows[0]["id"]  # the same message sent again: the same request, not refused
    assert held.pending(db, 2 * hour) == 0  # expired ones do not count
    tid = held.task_of(rows[0], None).id
    number, nonce = held.parse_task_id(tid)
    assert number == rows[0]["id"] and len(nonce) == 24 and tid == f"h-{number}-{nonce}"
    owner = Party(False, "anonymous", "2001:db8::0")  # tasks/get names no sender: the address
    assert held.owned_by(rows[0], nonce, owner) and not held.owned_by(rows[0], nonce[:-1] + "x", owner)
    assert not held.owned_by(rows[0], nonce, Party(False, "anonymous", "2001:db8::1"))
    assert held.parse_task_id(f"h-{number}") is None and held.parse_task_id("h-x-1") is None
    db.close()


def test_the_face_refuses_a_message_when_the_held_queue_is_full_and_limits_before_reading(tmp_path):
    from collections import Counter

    from meshnode.faces.a2a import held
    from meshnode.faces.a2a.admission import Party
    from meshnode.store.database import Database

    face = _face(tmp_path, "127.0.0.1", [])
    db = Database(tmp_path / "db.sqlite")
    for i in range(face.settings.max_held):  # the queue full, one message from each of 20 networks
        assert held.hold(db, Party(False, "s", f"198.51.{i}.1"), "hi", "", 0, 3_600_000, b"k" * 32, face.shares)
    counts: Counter = Counter()
    reads: list = []

    async def read(fn, *args):
        return fn(db, *args)

    async def receive():
        reads.append(1)
        return {"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}
    face.services.read, face.services.store = read, db
    face.services.metrics = type("M", (), {"inc": lambda self, name, **labels: counts.update([(name, *labels.values())])})()
    face.guard.host_ok = lambda h: True
    body = {"jsonrpc": "2.0", "id": 3, "method": "message/send", "params": {"message": {
        "messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}}
    scope = {"type": "http", "path": cards.RPC_PATH, "method": "POST", "scheme": "http", "client": ("192.0.2.7", 1),
             "headers": [(b"host", b"127.0.0.1:1"), (b"content-type", b"application/json")]}
    response = trio.run(face._respond, scope, receive)
    error = json.loads(response.body)["error"]
    assert response.status_code == 429 and error["data"]["type"] == "held_full" and error["data"]["share"] == "queue"
    assert 60 <= int(response.headers["retry-after"]) <= 600 and "minutes" in error["message"]  # minutes, not a day
    assert counts[("a2a_messages", "held_full")] == 1
    # a flood from one address is refused, then (past the read bucket, 20 x burst) before its body is read
    statuses = [trio.run(face._respond, scope, receive).status_code for _ in range(100)]
    assert set(statuses) == {429} and len(reads) == 3 * 20  # the 60 the read bucket let through
    db.close()


def test_a_child_node_advertises_its_own_url_and_has_its_own_known_parties(tmp_path):
    from meshnode.base.config import load_config
    from meshnode.engines.spawn import child_config

    (tmp_path / "config.toml").write_text('[a2a]\npublic_url = "https://parent.example"\n'
                                          f'known_tokens_path = "{tmp_path}/shared.tokens"\n', encoding="utf-8")
    parent = load_config(tmp_path, environ={})
    values = child_config.child_values(parent, name="kid", kind="clone", listen_port=1, web_port=2,
                                       parent_did=NodeKey.generate().did)
    assert values["a2a"]["public_url"] == "" and values["a2a"]["known_tokens_path"] == "a2a.tokens"


def _handler_on(db, chat_send):
    from types import SimpleNamespace

    from meshnode.faces.a2a.handler import MeshRequestHandler
    from meshnode.base.config.a2a import a2a_settings

    async def run(fn, *args):
        return fn(db, *args)

    counted: list = []
    services = SimpleNamespace(store=db, read=run, write=run, key=NodeKey.generate(), now=lambda: 0,
                               call=chat_send, metrics=SimpleNamespace(inc=lambda name, **l: counted.append(l)))
    return MeshRequestHandler(services, a2a_settings({})), counted


def test_an_approved_message_being_delivered_at_shutdown_is_finished_not_left_working(tmp_path):
    from meshnode.faces.a2a import held
    from meshnode.faces.a2a.admission import Party
    from meshnode.records.gate import confirm
    from meshnode.store.database import Database

    db = Database(tmp_path / "db.sqlite")
    entered, release = trio.Event(), trio.Event()

    asked = []

    async def chat_send(cmd, text, thread, wait_seconds, actor):
        asked.append(actor)
        entered.set()
        await release.wait()
        return {"did": "chat:abc", "thread": "t" * 16}
    handler, counted = _handler_on(db, chat_send)
    row = held.hold(db, Party(False, "s", "192.0.2.1"), "hi", "", 0, 3_600_000, b"k" * 32, _shares(20))
    confirm.decide(db, row["id"], True, 1, "cli")

    async def main():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(handler.conversations.deliver_round)
            await entered.wait()
            nursery.cancel_scope.cancel()  # the web server shuts down mid-delivery
            release.set()
    trio.run(main)
    assert held.row(db, row["id"])["status"] == "done" and {"outcome": "approved"} in counted
    assert [(a.kind, a.id) for a in asked] == [("a2a", "unknown:192.0.2.1:s")]  # the party asked, not the person
    # a row a previous run claimed and never finished: failed at the next start, with the reason
    other = held.hold(db, Party(False, "s", "192.0.2.1"), "again", "", 0, 3_600_000, b"k" * 32, _shares(20))
    confirm.decide(db, other["id"], True, 1, "cli")
    assert confirm.claim(db, other["id"])
    assert held.task_of(held.row(db, other["id"]), None).status.state == TaskState.TASK_STATE_WORKING
    assert held.settle_interrupted(db) == 1
    settled = held.row(db, other["id"])
    assert settled["status"] == "failed" and settled["result"]["error"] == held.INTERRUPTED
    assert held.task_of(settled, None).status.state == TaskState.TASK_STATE_FAILED
    db.close()


def test_messages_are_counted_by_outcome_including_those_a_person_rejects(tmp_path):
    from meshnode.faces.a2a import held
    from meshnode.faces.a2a.admission import Party
    from meshnode.records.gate import confirm
    from meshnode.store.database import Database

    db = Database(tmp_path / "db.sqlite")

    async def chat_send(cmd, text, thread, wait_seconds, actor):
        return {"did": "chat:abc", "thread": "t" * 16}
    handler, counted = _handler_on(db, chat_send)
    rows = [held.hold(db, Party(False, "s", "192.0.2.1"), f"m{i}", "", 0, 3_600_000, b"k" * 32, _shares(20))
            for i in range(3)]
    trio.run(handler.conversations.deliver_round)  # all three wait
    assert counted == []
    confirm.decide(db, rows[0]["id"], False, 1, "cli")
    confirm.decide(db, rows[1]["id"], True, 1, "cli")
    handler.services.now = lambda: 3_600_001  # the third expires
    trio.run(handler.conversations.deliver_round)
    assert sorted(c["outcome"] for c in counted) == ["approved", "expired", "rejected"]
    trio.run(handler.conversations.deliver_round)  # each counted once
    assert len(counted) == 3
    db.close()


def test_a_body_that_does_not_arrive_is_refused_not_waited_for(tmp_path):
    from trio.testing import MockClock

    face = _face(tmp_path, "127.0.0.1", [])
    face.guard.host_ok = lambda h: True
    face.services.metrics = type("M", (), {"inc": lambda self, name, **labels: None})()

    async def receive():  # a client that sent its headers and never its body
        await trio.sleep_forever()
    scope = {"type": "http", "path": cards.RPC_PATH, "method": "POST", "scheme": "http", "client": ("192.0.2.7", 1),
             "headers": [(b"host", b"127.0.0.1:1"), (b"content-type", b"application/json")]}
    response = trio.run(face._respond, scope, receive, clock=MockClock(autojump_threshold=0))
    assert response.status_code == 408 and response.headers["connection"] == "close"
