"""A child on another host, in process: the invitation and the hello (spawn/invitation.py, the
parent's hook in the exchange's push, the child's HelloSender), the two container classes, and the bundle
(spawn/bundle.py: members, no key material, tampering, expiry, unsafe members)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

import pytest
import trio

from meshnode.base.container import build_container, decode_container
from meshnode.base.container.errors import ContainerError
from meshnode.store.home import init_home
from meshnode.base.identity.keys import NodeKey
from meshnode.base.metrics import Metrics
from meshnode.net.events import PeerEvents
from meshnode.net.mesh_exchange import Exchange
from meshnode.domain.notes import make_note
from meshnode.records import family
from meshnode.engines.spawn import bundle as spawn_bundle, hello as spawn_hello
from meshnode.engines.spawn.bundle import MEMBERS, init_from_bundle, write_bundle
from meshnode.engines.spawn.invitation import (HELLO_CLASS, INVITATION_CLASS, SKEW_MS, accept_hello, check_invitation,
                                       make_hello, make_invitation, record_invitation)
from meshnode.engines.spawn.model import KINDS, SpawnRequest
from meshnode.base.errors import SpawnError
from meshnode.engines.spawn.parent import LocalParent
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
    from meshnode.base.container.schema import class_schema

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


def test_a_remote_childs_loopback_addresses_are_not_recorded(parent_db):
    """The parent dials its children at the recorded addresses (spawn/keeper.py): a remote child's
    loopback is the parent's own host."""
    from meshnode.engines.spawn.keeper import dialable_children

    parent = NodeKey.generate()
    inv = invite(parent, parent_db)
    child = NodeKey.generate()
    hello = make_hello(child, inv.to_bytes(), ["/ip4/127.0.0.1/tcp/4101", "/ip6/::1/tcp/4101",
                                               "/ip4/192.0.2.9/tcp/4101"], T0 + 1000, host="far-away")
    accept_hello(parent_db, hello, parent_did=parent.did, now_ms=T0 + 2000)
    assert dialable_children(parent_db) == [(child.did, ["/ip4/192.0.2.9/tcp/4101"])]


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
    used = parent_db.conn.execute("SELECT count(*) FROM spawn_invitations WHERE used_by_did IS NOT NULL").fetchone()
    assert used == (0,)


def test_a_failure_to_record_gives_the_invitation_back(parent_db, monkeypatch):
    parent = NodeKey.generate()
    inv = invite(parent, parent_db)

    def broken(db, rec, now_ms):
        raise SpawnError("seed_failed", "the disk is full")

    monkeypatch.setattr(family, "record_child", broken)
    assert refused(parent_db, hello_for(inv)[1], parent.did) == "seed_failed"
    assert parent_db.conn.execute("SELECT used_by_did FROM spawn_invitations").fetchone() == (None,)


# --- the hook in the exchange's push ----------------------------------------------------------------


async def test_serve_hello_takes_a_hello_only_from_its_child_and_counts():
    parent = NodeKey.generate()
    inv = invite(parent)
    child, hello = hello_for(inv)
    seen = []

    async def hook(h, did):
        seen.append((h.did, did))
        return None if did == child.did else ("invitation_used", "no")

    def exchange(on_hello, metrics):  # no store, no network: only the hello's path is driven
        return Exchange(parent, None, None, None, None, None, None, None, None, PeerEvents(), metrics, lambda: 0,
                        max_frame_bytes=1 << 20, min_trust=0.0, on_hello=on_hello)

    metrics = Metrics()
    taking, taking_none = exchange(hook, metrics), exchange(None, metrics)
    assert await taking._serve_hello(hello, child.did) is None
    assert (await taking._serve_hello(hello, parent.did))[0] == "bad_hello"  # relayed by another
    assert seen == [(hello.did, child.did)]
    assert (await taking_none._serve_hello(hello, child.did))[0] == "no_hello"
    assert metrics.get("spawn_hello_accepted") == 1
    assert metrics.get("spawn_hello_refused", reason="bad_hello") == 1


async def test_a_hello_that_came_another_way_is_never_stored():
    from meshnode.net.author_rate import RateSettings
    from meshnode.net.mesh_admission import AdmissionService
    from meshnode.store.known import KnownAuthors

    _, hello = hello_for(invite(NodeKey.generate()))
    fake = AdmissionService(None, None, KnownAuthors(set()), None, None, None, None, Metrics(), lambda: 0, quotas=None,
                            known_min_trust=0.0, max_unknown_peers=0, rate=RateSettings(), upkeep_s=30.0)  # no store
    for via in ("gossip", "sync", "push"):
        assert (await fake.store_from_peer(hello, hello.sender_did, via)).outcome == "refused"
    assert fake.metrics.get("containers_refused", reason="point_to_point", via="gossip") == 1
    inv = invite(NodeKey.generate())  # travels in a bundle and inside a hello only: no node takes one by itself
    for via in ("gossip", "sync", "push"):
        assert (await fake.store_from_peer(inv, inv.sender_did, via)).outcome == "refused"
    assert fake.metrics.get("containers_refused", reason="point_to_point", via="push") == 2


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


# --- the bundle ---------------------------------------------------------------------------------

NOW = 1_790_000_000_000  # the bundle tests' clock (after the notes below were written)


class Parent(LocalParent):
    """A stopped parent with fixed addresses (a loopback one and a public one)."""

    public = True

    def addresses(self):
        found = [f"/ip4/127.0.0.1/tcp/4001/p2p/{self.peer_id}"]
        return found + ([f"/ip4/192.0.2.7/tcp/4001/p2p/{self.peer_id}"] if self.public else [])


@pytest.fixture
def parent(tmp_path, monkeypatch):
    for name in [n for n in os.environ if n.startswith("MESHNODE_")]:
        monkeypatch.delenv(name)
    config, made = init_home(tmp_path / "mum", name="mum", passphrase=None, exist_ok=False)
    db = Database(config.db_path)
    db.put_container(make_note(made.key, "only for my person", now_ms=NOW - 5000), received_at_ms=NOW - 5000)
    db.put_container(make_note(made.key, "hello world", audience="public", now_ms=NOW - 4000),
                     received_at_ms=NOW - 4000)
    side = Parent(config, made.key, db)
    yield config, made.key, side
    db.close()


def bundle_of(parent, tmp_path, name="child.tgz", **kw):
    config, key, side = parent
    req = SpawnRequest(kind=kw.pop("kind", "trained"), bundle=tmp_path / name, expires_hours=kw.pop("hours", 1.0),
                       name=kw.pop("child_name", None))
    return write_bundle(config, key, req, side, now_ms=kw.pop("now", NOW))


def members(path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}


def rewrite(path, out, changes: dict[str, bytes | None], rehash: bool = True, extra=()) -> None:
    """A copy of the bundle with members changed (None: left out), its manifest's hashes redone."""
    files = members(path)
    files.update(changes)
    if rehash:
        manifest = json.loads(files[spawn_bundle.MANIFEST])
        for name, data in files.items():
            if name in manifest["files"] and data is not None:
                manifest["files"][name] = hashlib.sha256(data).hexdigest()
        files[spawn_bundle.MANIFEST] = json.dumps(manifest).encode()
    with tarfile.open(out, "w:gz") as tar:
        for name, data in files.items():
            if data is not None:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        for info, data in extra:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)


def init_refused(path, tmp_path, now=NOW + 1000) -> str:
    home = tmp_path / "kid"
    with pytest.raises(SpawnError) as caught:
        init_from_bundle(path, home, now_ms=now)
    assert not home.exists()  # nothing left behind
    return caught.value.code


def test_a_bundle_holds_five_members_and_the_parent_records_its_invitation(parent, tmp_path):
    config, key, side = parent
    result = bundle_of(parent, tmp_path, child_name="far-kid")
    files = members(result.bundle)
    assert list(files) == list(MEMBERS)
    manifest = json.loads(files[spawn_bundle.MANIFEST])
    assert (manifest["format"], manifest["kind"], manifest["name"], manifest["parent"], manifest["depth"]) == (
        1, "trained", "far-kid", key.did, 1)
    assert files[spawn_bundle.BOOTSTRAP].decode().split() == [f"/ip4/192.0.2.7/tcp/4001/p2p/{key.peer_id}"]
    inv = check_invitation(files[spawn_bundle.INVITATION], now_ms=NOW)
    assert inv.payload["id"] == result.invitation and inv.payload["bundle_hash"] == manifest["files"]["seed.db"]
    row = side.db.conn.execute("SELECT id, kind, name, used_by_did FROM spawn_invitations").fetchone()
    assert row == (result.invitation, "trained", "far-kid", None)
    assert "tcp/0" in files[spawn_bundle.TEMPLATE].decode() and "0.0.0.0" in files[spawn_bundle.TEMPLATE].decode()
    assert (tmp_path / "child.tgz").stat().st_mode & 0o077 == 0


def test_no_member_holds_key_material(parent, tmp_path):
    config, key, side = parent
    result = bundle_of(parent, tmp_path, kind="clone")
    seed = key.seed()
    secrets_ = [seed, seed.hex().encode(), base64.b64encode(seed), base64.urlsafe_b64encode(seed).rstrip(b"="),
                config.key_path.read_bytes()]
    blob = members(result.bundle)
    assert blob  # something to search
    for name, data in blob.items():
        for secret in secrets_:
            assert secret not in data, f"key material in {name}"
    seeded = tmp_path / "seed-check.db"
    seeded.write_bytes(blob[spawn_bundle.SEED])
    check = Database(seeded)
    try:
        assert check.conn.execute("SELECT count(*) FROM identity").fetchone()[0] == 0
    finally:
        check.close()


def test_a_bundle_is_never_written_over_a_file_nor_without_a_public_address(parent, tmp_path):
    (tmp_path / "child.tgz").write_bytes(b"mine")
    with pytest.raises(SpawnError) as caught:
        bundle_of(parent, tmp_path)
    assert caught.value.code == "bundle_exists" and (tmp_path / "child.tgz").read_bytes() == b"mine"
    parent[2].public = False
    with pytest.raises(SpawnError) as caught:
        bundle_of(parent, tmp_path, name="other.tgz")
    assert caught.value.code == "no_public_address" and not (tmp_path / "other.tgz").exists()
    assert parent[2].db.conn.execute("SELECT count(*) FROM spawn_invitations").fetchone()[0] == 0


def test_init_from_bundle_makes_a_pending_child_with_its_own_key(parent, tmp_path):
    config, key, side = parent
    result = bundle_of(parent, tmp_path)
    made = init_from_bundle(tmp_path / "child.tgz", tmp_path / "kid", now_ms=NOW + 1000)
    assert made["parent"] == key.did and made["kind"] == "trained" and made["did"] != key.did
    assert made["name"] == result.name
    assert all(not a.endswith("/tcp/0") for a in made["listen"]) and not made["web_listen"].endswith(":0")
    child = Database(tmp_path / "kid" / "data" / "meshnode.db")
    try:
        origin = family.origin(child)
        assert (origin["parent_did"], origin["hello_state"], origin["invitation_id"]) == (
            key.did, "pending", result.invitation)
        assert spawn_hello.pending_origin(child)[0] == key.did
        assert child.conn.execute("SELECT id FROM identity").fetchone() == (made["did"],)
        texts = [r[0] for r in child.conn.execute("SELECT text FROM notes")]
        assert "only for my person" not in texts  # the kind's rules, applied again on the target
    finally:
        child.close()
    assert key.peer_id in (tmp_path / "kid" / "bootstrap.txt").read_text()


def test_a_parent_serving_its_web_over_tls_writes_a_bundle_that_loads_on_another_host(parent, tmp_path):
    """The parent's certificate and key files are on the parent's host (and its key is its own): the
    template names neither, and the child's web listens on loopback until its person sets it up."""
    from meshnode.base.config import load_config

    config, key, side = parent
    (config.home / "tls").mkdir()
    for name in ("cert.pem", "key.pem"):
        (config.home / "tls" / name).write_text("test\n")
    env = {"MESHNODE_WEB_TLS_CERT": "tls/cert.pem", "MESHNODE_WEB_TLS_KEY": str(config.home / "tls" / "key.pem"),
           "MESHNODE_WEB_LISTEN": "0.0.0.0:8443"}
    result = bundle_of((load_config(config.home, environ=env), key, side), tmp_path)
    assert "tls/" not in members(result.bundle)[spawn_bundle.TEMPLATE].decode()
    made = init_from_bundle(result.bundle, tmp_path / "kid", now_ms=NOW + 1000)
    child = load_config(tmp_path / "kid", environ={})
    assert child.get("web", "tls_cert") == child.get("web", "tls_key") == ""
    assert made["web_listen"].startswith("127.0.0.1:")


def test_the_unsigned_parent_name_cannot_add_a_bootstrap_line(parent, tmp_path):
    config, key, side = parent
    result = bundle_of(parent, tmp_path)
    manifest = json.loads(members(result.bundle)[spawn_bundle.MANIFEST])
    extra = f"/ip4/203.0.113.66/tcp/4001/p2p/{key.peer_id}"
    rewrite(result.bundle, tmp_path / "named.tgz",
            {spawn_bundle.MANIFEST: json.dumps(dict(manifest, parent_name=f"mum\n{extra}")).encode()}, rehash=False)
    init_from_bundle(tmp_path / "named.tgz", tmp_path / "kid", now_ms=NOW + 1000)
    text = (tmp_path / "kid" / "bootstrap.txt").read_text()
    assert "203.0.113.66" not in text
    assert text.rstrip("\n").splitlines()[-1] == f"# parent {key.did} parent"


def test_a_tampered_store_is_refused(parent, tmp_path):
    result = bundle_of(parent, tmp_path)
    files = members(result.bundle)
    seed = bytearray(files[spawn_bundle.SEED])
    seed[-100] ^= 1
    rewrite(result.bundle, tmp_path / "rehashed.tgz", {spawn_bundle.SEED: bytes(seed)})
    assert init_refused(tmp_path / "rehashed.tgz", tmp_path) == "bad_bundle"  # the signed hash differs
    rewrite(result.bundle, tmp_path / "plain.tgz", {spawn_bundle.SEED: bytes(seed)}, rehash=False)
    assert init_refused(tmp_path / "plain.tgz", tmp_path) == "bad_bundle"  # the manifest's hash differs


def test_a_tampered_config_template_is_refused(parent, tmp_path):
    """The child's whole config comes from the template (LLM endpoints, gate rules, web listen):
    a bundle whose seed and invitation are intact but whose template was changed is not the parent's."""
    result = bundle_of(parent, tmp_path)
    text = members(result.bundle)[spawn_bundle.TEMPLATE].decode()
    changed = text.replace('name = "', 'name = "x', 1).encode()
    assert changed != text.encode()
    rewrite(result.bundle, tmp_path / "config.tgz", {spawn_bundle.TEMPLATE: changed})
    assert init_refused(tmp_path / "config.tgz", tmp_path) == "bad_bundle"
    inv = decode_container(members(result.bundle)[spawn_bundle.INVITATION], now_ms=NOW)
    assert inv.payload["config_hash"] == hashlib.sha256(text.encode()).hexdigest()


def test_a_tampered_or_expired_invitation_is_refused(parent, tmp_path):
    result = bundle_of(parent, tmp_path)
    raw = bytearray(members(result.bundle)[spawn_bundle.INVITATION])
    inv = decode_container(bytes(raw), now_ms=NOW)
    raw[raw.find(inv.signature) + 7] ^= 1
    rewrite(result.bundle, tmp_path / "forged.tgz", {spawn_bundle.INVITATION: bytes(raw)})
    assert init_refused(tmp_path / "forged.tgz", tmp_path) == "bad_signature"
    assert init_refused(result.bundle, tmp_path, now=NOW + 3_600_000 + SKEW_MS) == "invitation_expired"
    manifest = json.loads(members(result.bundle)[spawn_bundle.MANIFEST])
    rewrite(result.bundle, tmp_path / "wider.tgz", {spawn_bundle.MANIFEST: json.dumps(dict(manifest, kind="clone"))
                                                    .encode()}, rehash=False)
    assert init_refused(tmp_path / "wider.tgz", tmp_path) == "bad_bundle"  # the kind is the signed one


def test_unsafe_members_refuse_the_whole_bundle(parent, tmp_path):
    result = bundle_of(parent, tmp_path)
    outside = tmp_path / "evil"
    cases = {"traversal": [(tarfile.TarInfo("../evil"), b"x")], "absolute": [(tarfile.TarInfo(str(outside)), b"x")],
             "extra": [(tarfile.TarInfo("notes.txt"), b"x")]}
    for case, extra in cases.items():
        for info, data in extra:
            info.size = len(data)
        rewrite(result.bundle, tmp_path / f"{case}.tgz", {}, extra=extra)
        assert init_refused(tmp_path / f"{case}.tgz", tmp_path) == "bad_bundle", case
        assert not outside.exists()
    link = tarfile.TarInfo(spawn_bundle.BOOTSTRAP)
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    rewrite(result.bundle, tmp_path / "link.tgz", {spawn_bundle.BOOTSTRAP: None}, extra=[(link, None)])
    assert init_refused(tmp_path / "link.tgz", tmp_path) == "bad_bundle"
    rewrite(result.bundle, tmp_path / "short.tgz", {spawn_bundle.TEMPLATE: None})
    assert init_refused(tmp_path / "short.tgz", tmp_path) == "bad_bundle"
    (tmp_path / "junk.tgz").write_bytes(b"\x1f\x8b not really")
    assert init_refused(tmp_path / "junk.tgz", tmp_path) == "bad_bundle"


def test_a_bundle_child_is_accepted_by_its_parent(parent, tmp_path):
    config, key, side = parent
    bundle_of(parent, tmp_path)
    made = init_from_bundle(tmp_path / "child.tgz", tmp_path / "kid", now_ms=NOW + 1000)
    child = Database(tmp_path / "kid" / "data" / "meshnode.db")
    try:
        raw = bytes(child.conn.execute("SELECT invitation FROM spawn_origin").fetchone()[0])
    finally:
        child.close()
    from meshnode.store.home import open_identity
    from meshnode.base.config import load_config

    child_key = open_identity(load_config(tmp_path / "kid", environ={}))
    assert child_key.did == made["did"]
    answer = accept_hello(side.db, make_hello(child_key, raw, [], NOW + 2000), parent_did=key.did, now_ms=NOW + 3000)
    assert answer["outcome"] == "accepted" and family.children(side.db)[0]["did"] == made["did"]


def test_the_cli_makes_a_child_from_a_bundle_once(parent, tmp_path, capsys):
    from meshnode.faces.cli import main
    from meshnode.base.container import now_ms

    bundle_of(parent, tmp_path, now=now_ms())
    argv = ["--home", str(tmp_path / "kid"), "init", "--from-bundle", str(tmp_path / "child.tgz")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"parent:  {parent[1].did} (trained, depth 1)" in out and "hello:   pending" in out
    assert main(argv) == 1  # the home is taken now
    assert "not an empty folder" in capsys.readouterr().err


def test_init_from_bundle_installs_the_autostart_asked_for(parent, tmp_path):
    bundle_of(parent, tmp_path)
    made = init_from_bundle(tmp_path / "child.tgz", tmp_path / "kid", autostart="script", now_ms=NOW + 1000)
    assert made["autostart"]["kind"] == "script" and made["started"] is False
    assert all(Path(f).is_file() and str(tmp_path / "kid") in f for f in made["autostart"]["files"])
    with pytest.raises(SpawnError) as caught:
        init_from_bundle(tmp_path / "child.tgz", tmp_path / "kid2", autostart="cron", now_ms=NOW + 1000)
    assert caught.value.code == "bad_autostart"


def test_a_bundle_child_has_its_parent_as_its_only_friend_unless_friends_says_otherwise(parent, tmp_path):
    """Issue 35 (9): the bundle's store carries the Friend tags the spawn keeps, not the parent's."""
    from meshnode.engines.spawn import friends
    from meshnode.store.sharing import friends as friend_dids, set_friend

    config, key, side = parent
    mate, other = NodeKey.generate(), NodeKey.generate()
    set_friend(side.db, mate.did, mate.peer_id, NOW - 1000)
    cases = {"one": (None, [key.did]), "two": (f"inherit,{other.did}", sorted([key.did, mate.did, other.did]))}
    for name, (text, wanted) in cases.items():
        req = SpawnRequest(kind="trained", bundle=tmp_path / f"{name}.tgz", expires_hours=1.0, friends=text)
        write_bundle(config, key, req, side, now_ms=NOW, friends=friends.parse(text, "trained"))
        init_from_bundle(tmp_path / f"{name}.tgz", tmp_path / name, now_ms=NOW + 1000)
        child = Database(tmp_path / name / "data" / "meshnode.db", create=False)
        try:
            assert friend_dids(child) == wanted
            assert child.conn.execute("SELECT 1 FROM agent_peers WHERE id = ?", (mate.did,)).fetchone()  # known
        finally:
            child.close()
