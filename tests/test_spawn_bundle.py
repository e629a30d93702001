"""A child on another host, in process: the invitation and the hello (spawn/invitation.py, the
parent's hook in _serve_push, the child's HelloSender), the two container classes, and the bundle
(spawn/bundle.py: members, no key material, tampering, expiry, unsafe members)."""

from __future__ import annotations

import types

import pytest
import trio

from meshnode.container import build_container, decode_container
from meshnode.container.errors import ContainerError
from meshnode.identity.keys import NodeKey
from meshnode.metrics import Metrics
from meshnode.net.mesh_exchange import ExchangeMixin
from meshnode.spawn import family, hello as spawn_hello
from meshnode.spawn.invitation import (HELLO_CLASS, INVITATION_CLASS, SKEW_MS, accept_hello, check_invitation,
                                       make_hello, make_invitation, record_invitation)
from meshnode.spawn.model import KINDS, SpawnError
from meshnode.store import Database, Store
from meshnode.store.sharing import PRIVATE_CLASSES, may_share

T0 = 1_780_000_000_000
HOUR = 3_600_000
HASH = "ab" * 32
ADDRS = ["/ip4/192.0.2.7/tcp/4001/p2p/12D3KooWxyz"]


@pytest.fixture
def parent_db(tmp_path):
    d = Database(tmp_path / "parent.db")
    yield d
    d.close()


def invite(key: NodeKey, db: Database | None = None, *, expires_ms: int = T0 + HOUR, **kw):
    inv = make_invitation(key, kind=kw.get("kind", "trained"), name=kw.get("name", "kid"), depth=1,
                          expires_ms=expires_ms, bundle_hash=HASH, addresses=ADDRS, now_ms=T0)
    if db is not None:
        record_invitation(db, inv, T0)
    return inv


def hello_for(inv, child: NodeKey | None = None, at: int = T0 + 1000):
    child = child or NodeKey.generate()
    return child, make_hello(child, inv.to_bytes(), ["/ip4/192.0.2.9/tcp/4001"], at, host="far-away")


def refused(db, hello, parent_did, at=T0 + 2000) -> str:
    with pytest.raises(SpawnError) as caught:
        accept_hello(db, hello, parent_did=parent_did, now_ms=at)
    return caught.value.code


# --- the classes --------------------------------------------------------------------------------


def test_the_classes_check_their_fields_and_stay_private():
    key = NodeKey.generate()
    inv = invite(key)
    assert decode_container(inv.to_bytes(), now_ms=T0).cls == INVITATION_CLASS
    assert set(PRIVATE_CLASSES) >= {INVITATION_CLASS, HELLO_CLASS}
    bad = dict(inv.payload, kind="twin")
    with pytest.raises(ContainerError) as caught:
        build_container(key, INVITATION_CLASS, bad, timestamp_ms=T0)
    assert caught.value.code == "class_schema"
    for field, value in (("id", "XYZ"), ("depth", 17), ("bundle_hash", "ab"), ("addresses", ["a"] * 17)):
        with pytest.raises(ContainerError):
            build_container(key, INVITATION_CLASS, dict(inv.payload, **{field: value}), timestamp_ms=T0)
    with pytest.raises(ContainerError):
        build_container(key, HELLO_CLASS, {"invitation": b"x" * (16 * 1024 + 1), "child": key.did, "addresses": []},
                        timestamp_ms=T0)


def test_the_class_lists_the_kinds_of_the_model():
    from meshnode.container.schema import class_schema

    check = class_schema(INVITATION_CLASS, "1.0").fields["kind"][0]
    assert check.json["enum"] == list(KINDS)


def test_a_stored_invitation_is_never_given_out(parent_db):
    key = NodeKey.generate()
    inv = invite(key)
    parent_db.put_container(inv, received_at_ms=T0)
    assert not may_share(parent_db, inv.did, NodeKey.generate().did, key.did)


# --- check_invitation (the target's side) -------------------------------------------------------


def test_check_invitation_verifies_signature_parent_and_expiry():
    key = NodeKey.generate()
    inv = invite(key)
    assert check_invitation(inv.to_bytes(), now_ms=T0 + 10).did == inv.did
    raw = bytearray(inv.to_bytes())
    sig = raw.find(inv.signature)
    raw[sig + 5] ^= 1
    with pytest.raises(SpawnError) as caught:
        check_invitation(bytes(raw), now_ms=T0 + 10)
    assert caught.value.code == "bad_signature"
    with pytest.raises(SpawnError) as caught:
        check_invitation(inv.to_bytes(), now_ms=T0 + HOUR + SKEW_MS)
    assert caught.value.code == "invitation_expired"
    assert check_invitation(inv.to_bytes(), now_ms=T0 + HOUR + SKEW_MS - 1)  # within the clock skew
    other = build_container(key, INVITATION_CLASS, dict(inv.payload, parent=NodeKey.generate().did), timestamp_ms=T0)
    with pytest.raises(SpawnError) as caught:
        check_invitation(other.to_bytes(), now_ms=T0)
    assert caught.value.code == "bad_invitation"


# --- accept_hello (the parent's side) -----------------------------------------------------------


def test_a_hello_is_accepted_once_and_records_the_child(parent_db):
    parent = NodeKey.generate()
    inv = invite(parent, parent_db)
    child, hello = hello_for(inv)
    answer = accept_hello(parent_db, hello, parent_did=parent.did, now_ms=T0 + 2000)
    assert answer["outcome"] == "accepted" and not answer["again"] and answer["child"] == child.did
    kids = family.children(parent_db)
    assert [(k["did"], k["host"], k["name"], k["kind"]) for k in kids] == [(child.did, "far-away", "kid", "trained")]
    row = parent_db.conn.execute("SELECT used_by_did, used_ms FROM spawn_invitations").fetchone()
    assert row == (child.did, T0 + 2000)
    # the same child again (its ack was lost): accepted again, nothing recorded twice
    _, again = hello_for(inv, child, at=T0 + 5000)
    assert accept_hello(parent_db, again, parent_did=parent.did, now_ms=T0 + 6000)["again"] is True
    assert len(family.children(parent_db)) == 1
    # another node with the same invitation (a copied bundle): refused
    assert refused(parent_db, hello_for(inv)[1], parent.did) == "invitation_used"
    assert len(family.children(parent_db)) == 1


def test_hello_refusals(parent_db):
    parent = NodeKey.generate()
    expired = invite(parent, parent_db, expires_ms=T0 + 10_000)
    assert refused(parent_db, hello_for(expired)[1], parent.did, at=T0 + 10_000 + SKEW_MS) == "invitation_expired"
    unknown = invite(parent)  # signed by this parent, never recorded
    assert refused(parent_db, hello_for(unknown)[1], parent.did) == "unknown_invitation"
    stranger = NodeKey.generate()
    foreign = invite(stranger, parent_db)  # even with a row of the same id: another parent's signature
    assert refused(parent_db, hello_for(foreign)[1], parent.did) == "not_for_us"
    good = invite(parent, parent_db)
    child = NodeKey.generate()
    liar = build_container(child, HELLO_CLASS, {"invitation": good.to_bytes(), "child": NodeKey.generate().did,
                                                "addresses": []}, timestamp_ms=T0)
    assert refused(parent_db, liar, parent.did) == "bad_hello"
    raw = bytearray(good.to_bytes())
    raw[raw.find(good.signature) + 3] ^= 1
    forged = make_hello(child, bytes(raw), [], T0, host="h")
    assert refused(parent_db, forged, parent.did) == "bad_signature"
    assert family.children(parent_db) == []
    assert parent_db.conn.execute("SELECT count(*) FROM spawn_invitations WHERE used_by_did IS NOT NULL").fetchone()[0] == 0


def test_a_failure_to_record_gives_the_invitation_back(parent_db, monkeypatch):
    parent = NodeKey.generate()
    inv = invite(parent, parent_db)

    def broken(db, rec, now_ms):
        raise SpawnError("seed_failed", "the disk is full")

    monkeypatch.setattr(family, "record_child", broken)
    assert refused(parent_db, hello_for(inv)[1], parent.did) == "seed_failed"
    assert parent_db.conn.execute("SELECT used_by_did FROM spawn_invitations").fetchone() == (None,)


# --- the hook in _serve_push --------------------------------------------------------------------


async def test_serve_hello_takes_a_hello_only_from_its_child_and_counts():
    parent = NodeKey.generate()
    inv = invite(parent)
    child, hello = hello_for(inv)
    seen = []

    async def hook(h, did):
        seen.append((h.did, did))
        return None if did == child.did else ("invitation_used", "no")

    fake = types.SimpleNamespace(metrics=Metrics(), on_hello=hook)
    assert await ExchangeMixin._serve_hello(fake, hello, child.did) is None
    assert (await ExchangeMixin._serve_hello(fake, hello, parent.did))[0] == "bad_hello"  # relayed by another
    assert seen == [(hello.did, child.did)]
    fake.on_hello = None
    assert (await ExchangeMixin._serve_hello(fake, hello, child.did))[0] == "no_hello"
    assert fake.metrics.get("spawn_hello_accepted") == 1
    assert fake.metrics.get("spawn_hello_refused", reason="bad_hello") == 1


# --- the child's sender -------------------------------------------------------------------------


class FakeMesh:
    """A parent that answers the pushes from a script: each item an ack field or an exception."""

    def __init__(self, answers):
        self.answers, self.pushed = list(answers), []

    def addresses(self):
        return ["/ip4/192.0.2.9/tcp/4001"]

    async def push(self, did, containers):
        self.pushed.append((did, containers[0]))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        if answer == "accepted":
            return {"accepted": [containers[0].did], "duplicates": [], "rejected": []}
        return {"accepted": [], "duplicates": [], "rejected": [{"index": 0, "code": answer, "reason": "because"}]}


async def pending_child(tmp_path, inv) -> Store:
    store = await Store.open(tmp_path / "child.db")
    await store.write(lambda db: family.tie_parent(
        db, parent_did=inv.sender_did, parent_peer_id="p", parent_name="mum", addresses=ADDRS, kind="trained",
        depth=1, now_ms=T0, invitation_id=inv.payload["id"], invitation=inv.to_bytes(), hello_state="pending"))
    return store


def origin_state(db):
    return db.conn.execute("SELECT hello_state, hello_reason FROM spawn_origin").fetchone()


@pytest.mark.parametrize("answers, state", [
    (["busy", "no_hello", "accepted"], ("accepted", None)),
    (["over_budget", "invitation_used"], ("refused", "invitation_used")),
])
async def test_the_sender_retries_until_a_final_answer(tmp_path, answers, state):
    from meshnode.net.errors import NetError

    parent = NodeKey.generate()
    inv = invite(parent)
    async with await pending_child(tmp_path, inv) as store:
        mesh = FakeMesh([NetError("not_found", "not yet"), *answers])
        sender = spawn_hello.HelloSender(store, mesh, NodeKey.generate(), Metrics(), clock=lambda: T0 + 1000,
                                         delays=(0.001, 0.002))
        with trio.fail_after(10):
            await sender.run()
        assert await store.read(origin_state) == state
        assert sender.attempts == len(answers) + 1 and {d for d, _ in mesh.pushed} == {parent.did}
        assert all(c.cls == HELLO_CLASS for _, c in mesh.pushed)
        assert await store.read(spawn_hello.pending_origin) is None  # not sent again at the next start


async def test_the_sender_gives_up_when_the_invitation_expires(tmp_path):
    inv = invite(NodeKey.generate(), expires_ms=T0 + 5000)
    async with await pending_child(tmp_path, inv) as store:
        now = [T0]
        mesh = FakeMesh(["busy"] * 100)

        async def push(did, containers):
            now[0] += 2000
            return await FakeMesh.push(mesh, did, containers)

        mesh.push = push
        sender = spawn_hello.HelloSender(store, mesh, NodeKey.generate(), Metrics(), clock=lambda: now[0],
                                         skew_ms=0, delays=(0.001, 0.001))
        with trio.fail_after(10):
            await sender.run()
        assert await store.read(origin_state) == ("refused", "invitation_expired")
        assert sender.attempts == 3
