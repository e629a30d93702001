"""A2A that stays open (issue 33): a fair held queue (shares per party, address and subnet; a full one
refuses with 429 and a Retry-After of minutes; held messages expire), 401 for a wrong or withdrawn
token, the person's controls (held, reject, block: actions, CLI, API), and the card in the A2A 0.3
shape at both paths (read and talked to by a real 0.3 client's recorded requests: tests/test_a2a_wire.py)."""

from __future__ import annotations

import httpx
import pytest
import trio

from meshnode.app import actor
from meshnode.app.actor import person
from meshnode.app.context import App
from meshnode.app.dispatch import dispatch
from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.keys import NodeKey
from meshnode.faces.a2a import RPC_PATH, held
from meshnode.faces.a2a.admission import Party
from meshnode.records.a2a import blocks, held_queue
from meshnode.records.a2a.held_queue import Shares
from meshnode.store.database import Database
from meshnode.store.service import Store
from test_a2a_wire import node, recorded  # noqa: F401 (node: the fixture, a real node with a party's token)

HOUR = 3_600_000
SECRET = b"k" * 32


def _hold(db, sender: str, client: str, shares: Shares, text: str = "hi", now: int = 0, ttl: int = HOUR):
    return held.hold(db, Party(False, sender, client), text, "", now, ttl, SECRET, shares)


def test_the_held_queue_gives_each_party_address_and_subnet_a_share_and_says_when_to_retry(tmp_path):
    db = Database(tmp_path / "db.sqlite")
    shares = Shares(total=5, per_party=2, per_address=3, per_subnet=4, retry_after_ms=600_000)
    try:
        assert _hold(db, "p", "192.0.2.1", shares, "a") and _hold(db, "p", "192.0.2.1", shares, "b")
        assert _hold(db, "p", "192.0.2.1", shares, "c") is None  # the party's share
        assert held_queue.refusal(db, "unknown:192.0.2.1:p", "192.0.2.1", 0, shares).share == "party"
        assert _hold(db, "q", "192.0.2.1", shares) and _hold(db, "r", "192.0.2.1", shares) is None  # the address's
        assert held_queue.refusal(db, "unknown:192.0.2.1:r", "192.0.2.1", 0, shares).share == "address"
        assert _hold(db, "s", "192.0.2.2", shares) and _hold(db, "t", "192.0.2.3", shares) is None  # the /24's
        assert held_queue.refusal(db, "unknown:192.0.2.3:t", "192.0.2.3", 0, shares).share == "subnet"
        assert _hold(db, "u", "2001:db8:1::1", shares)  # another network: the queue's last place
        full = held_queue.refusal(db, "unknown:2001:db8:2::1:v", "2001:db8:2::1", 0, shares)
        assert full.share == "queue" and full.retry_after_ms == 600_000 and "10 minutes" in full.reason
        # an IPv6 host rotating through its /48 is one subnet
        assert held_queue.refusal(db, "unknown:2001:db8:1:ffff::9:w", "2001:db8:1:ffff::9", 0,
                                  Shares(10, 10, 10, 1, 600_000)).share == "subnet"
        # the wait is until the oldest of the full share expires, at least a minute
        assert held_queue.refusal(db, "x", "2001:db8:2::1", HOUR - 90_000, shares).retry_after_ms == 90_000
        assert held_queue.refusal(db, "x", "2001:db8:2::1", HOUR - 1_000, shares).retry_after_ms == 60_000
        assert held_queue.refusal(db, "x", "2001:db8:2::1", HOUR, shares) is None  # all expired: room again
        row = _hold(db, "p", "192.0.2.1", shares, "late", now=HOUR)
        task = held.task_of(row, None)  # a held task has a contextId, the one its conversation will have
        assert task.context_id.startswith("a2a-") and task.context_id == row["args"]["context_id"]
        again = _hold(db, "p", "192.0.2.1", shares, "late", now=HOUR)  # sent again: the same request
        assert again["id"] == row["id"] and held.task_of(again, None).context_id == task.context_id
    finally:
        db.close()


@pytest.fixture
async def app(tmp_path):
    async with await Store.open(tmp_path / "m.db") as store:
        yield App(store, NodeKey.generate(), clock=lambda: 0)


async def test_a_person_lists_rejects_and_blocks_and_nobody_else_may(app):
    shares = Shares(50, 5, 5, 50, 600_000)
    for i, (sender, client) in enumerate((("a", "192.0.2.1"), ("a", "192.0.2.1"), ("b", "192.0.2.2"),
                                          ("c", "198.51.100.7"), ("d", "198.51.100.8"), ("e", "203.0.113.1"))):
        await app.store.write(_hold, sender, client, shares, f"{i} from {sender} at {client}")
    for who in (actor.AGENT, actor.a2a("known:bob", "bob"), actor.peer("did:key:z6Mkpeer"), actor.node("reactor")):
        for name, args in (("a2a_held", {}), ("a2a_reject", {"all": True}), ("a2a_block", {"target": "a"}),
                           ("a2a_unblock", {"target": "a"}), ("a2a_blocks", {})):
            with pytest.raises(MeshnodeError) as info:
                await dispatch(app, who, name, args)
            assert info.value.code == "not_allowed", (who, name)
    listed = await dispatch(app, person("cli"), "a2a_held", {})
    assert [r["sender"] for r in listed] == ["a", "a", "b", "c", "d", "e"]
    assert listed[0]["subnet"] == "192.0.2.0/24" and listed[0]["text"].endswith("from a at 192.0.2.1")
    with pytest.raises(MeshnodeError, match="not both"):
        await dispatch(app, person("cli"), "a2a_reject", {"all": True, "party": "a"})
    with pytest.raises(MeshnodeError, match="not both"):
        await dispatch(app, person("cli"), "a2a_reject", {})
    assert (await dispatch(app, person("web"), "a2a_reject", {"party": "a"}))["count"] == 2
    assert (await dispatch(app, person("web"), "a2a_reject", {"address": "198.51.100.0/24"}))["count"] == 2
    blocked = await dispatch(app, person("cli"), "a2a_block", {"target": "203.0.113.1"})
    assert blocked["kind"] == "address" and blocked["target"] == "203.0.113.1/32" and len(blocked["rejected"]) == 1
    assert [r["sender"] for r in await dispatch(app, person("cli"), "a2a_held", {})] == ["b"]
    assert (await dispatch(app, person("mcp"), "a2a_block", {"target": "mallory"}))["kind"] == "party"
    assert [(b["kind"], b["target"], b["decided_by"]) for b in await dispatch(app, person("cli"), "a2a_blocks", {})] \
        == [("address", "203.0.113.1/32", "cli"), ("party", "mallory", "mcp")]
    assert (await dispatch(app, person("cli"), "a2a_reject", {"all": True}))["count"] == 1
    assert await dispatch(app, person("cli"), "a2a_held", {}) == []
    # a block names who it stops: a party by name or key, an address within a blocked network
    assert await app.store.read(blocks.blocked, ("mallory", "unknown:192.0.2.9:mallory"), "192.0.2.9") == "mallory"
    assert await app.store.read(blocks.blocked, ("x",), "203.0.113.1") == "203.0.113.1/32"
    assert await app.store.read(blocks.blocked, ("x",), "::ffff:203.0.113.1") == "203.0.113.1/32"
    assert await app.store.read(blocks.blocked, ("x",), "203.0.113.2") is None
    await dispatch(app, person("cli"), "a2a_unblock", {"target": "203.0.113.1"})
    assert await app.store.read(blocks.blocked, ("x",), "203.0.113.1") is None
    with pytest.raises(MeshnodeError) as info:
        await dispatch(app, person("cli"), "a2a_unblock", {"target": "203.0.113.1"})
    assert info.value.code == "not_found"
    for bad in ("", " ", "x" * 201, "a\nb"):
        with pytest.raises(MeshnodeError):
            await dispatch(app, person("cli"), "a2a_block", {"target": bad})


# --- a real node, talked to over HTTP from many loopback addresses ------------------------------

def _post(url: str, body: dict, source: str = "127.0.0.1", token: str | None = None) -> httpx.Response:
    """``body`` to /a2a from the loopback address ``source`` (the server sees it as the client)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(transport=httpx.HTTPTransport(local_address=source), headers=headers, timeout=60) as http:
        return http.post(url + RPC_PATH, json=body)


def _message(text: str, sender: str) -> dict:
    """A 0.3 client's message/send (as a2a-sdk 0.3.26 sent it: tests/golden/a2a_v03) with ``text``, ``sender``."""
    body = recorded("message_send_unknown")["json"]
    body["params"]["message"]["parts"][0]["text"] = text
    body["params"]["message"]["metadata"]["sender"] = sender
    return body


def test_a_flood_from_many_addresses_leaves_the_queue_open_and_the_person_clears_and_blocks_it(node):
    node, token = node
    url = node.web_url.rstrip("/")
    outcomes = {}
    for i in range(50):  # one message from each of 50 addresses of one /24
        response = _post(url, _message(f"flood {i}", f"flooder-{i}"), source=f"127.0.0.{10 + i}")
        outcomes.setdefault(response.status_code, []).append(response)
    assert sorted(outcomes) == [200, 429] and len(outcomes[200]) == 6  # [a2a] held_per_subnet
    refused = outcomes[429][0]
    assert refused.json()["error"]["data"] == {"type": "held_full", "share": "subnet",
                                               "retry_after_s": int(refused.headers["retry-after"])}
    assert 60 <= int(refused.headers["retry-after"]) <= 600  # minutes, not a day
    # a new honest party from another network is held: the flood did not fill the queue
    honest = _post(url, _message("hello, I am new here", "did:key:zHonest"), source="127.0.1.1")
    assert honest.status_code == 200 and honest.json()["result"]["status"]["state"] == "submitted"
    # a known party is served; a wrong or withdrawn token is refused (401), never taken for an unknown party
    asked = _message("hi, it is your friend", "friend")
    asked["params"]["configuration"] = {"blocking": False}
    known = _post(url, asked, token=token)
    assert known.status_code == 200 and known.json()["result"]["id"].startswith("m-")
    wrong = _post(url, _message("let me in", "friend"), token="not-a-token-" + "y" * 30)
    assert wrong.status_code == 401 and wrong.headers["www-authenticate"].startswith("Bearer")
    node.cli("a2a", "token", "remove", "friend")
    withdrawn = _post(url, _message("still me", "friend"), token=token)
    assert withdrawn.status_code == 401 and "withdrawn" in withdrawn.json()["error"]["message"]

    # the person sees the held messages, blocks the flood's network, and clears the rest
    listed = node.cli("a2a", "held")
    assert "flooder-0" in listed and "did:key:zHonest" in listed and "127.0.0.0/24" in listed
    assert "6 held message(s) rejected" in node.cli("a2a", "block", "127.0.0.0/24")
    assert _post(url, _message("again", "flooder-x"), source="127.0.0.99").status_code == 403
    web_token = (node.home / "web.token").read_text().strip()
    with httpx.Client(headers={"Authorization": f"Bearer {web_token}"}, timeout=60) as http:
        held_now = http.get(url + "/api/a2a/held").json()["result"]
        assert [h["sender"] for h in held_now] == ["did:key:zHonest"]
        assert http.post(url + "/api/a2a/reject", json={"all": True}).json()["result"]["count"] == 1
        assert http.get(url + "/api/a2a/blocks").json()["result"][0]["target"] == "127.0.0.0/24"
        assert http.post(url + "/api/a2a/unblock", json={"target": "127.0.0.0/24"}).json()["result"]["unblocked"]
    assert node.cli("a2a", "held") == "" and node.cli("a2a", "blocks") == ""
    assert _post(url, _message("after the block", "flooder-y"), source="127.0.0.98").status_code == 200
