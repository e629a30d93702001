"""The parent's signed one-time invitation for a child on another host, and the child's hello.

A bundle carries a ``spawn_invitation`` container signed by the parent (protocols/spawn.md 8):
the child cannot forge one, and the parent can tell its own from anyone else's. The child answers
with a ``spawn_hello`` signed by its new key, holding the invitation's bytes; the parent accepts
it once (``spawn_invitations.used_by_did``), before the invitation expires, and records the child.
Both classes are point to point: never gossiped, never shared by sync, the hello never stored.
"""

from __future__ import annotations

import secrets
import socket

from meshnode.base.container import Container, ContainerError, DEFAULT_LIMITS, build_container, decode_container
from meshnode.base.container.schema import HELLO_CLASS, INVITATION_CLASS  # noqa: F401 (spawn's names for them)
from meshnode.base.container.timefmt import format_ms, parse_ms
from meshnode.base.identity.did import did_to_peer_id
from meshnode.base.identity.keys import NodeKey
from meshnode.records import family
from meshnode.base.errors import SpawnError
from meshnode.store.database import Database

CLASS_VERSION = "1.0"
MAX_ADDRESSES = 16
MAX_INVITATION_BYTES = 16 * 1024  # the hello's `invitation` field (protocols/classes.md)
SKEW_MS = DEFAULT_LIMITS.clock_skew_ms
LOOPBACK = ("/ip4/127.", "/ip6/::1/")
HOST_CHARS = 64  # what a listing shows of the host name a child gives
# the refusals a child gets for good: asking again with the same invitation cannot succeed
REFUSALS = ("bad_hello", "bad_invitation", "bad_signature", "not_for_us", "unknown_invitation",
            "invitation_used", "invitation_expired")


def shown_host(text: object) -> str:
    """The host name a remote child told, as one printable line (it is the child's word, shown in
    ``children list``: no line breaks or control characters to forge rows with), or ``remote``."""
    if not isinstance(text, str):
        return "remote"
    clean = "".join(ch if ch.isprintable() and not ch.isspace() else "?" for ch in text.strip())[:HOST_CHARS]
    return clean or "remote"


def make_invitation(key: NodeKey, *, kind: str, name: str, depth: int, expires_ms: int,
                    bundle_hash: str, addresses: list[str], now_ms: int, config_hash: str | None = None) -> Container:
    """A new invitation with a fresh 128-bit id, signed by the parent's ``key``; ``config_hash``
    (a bundle's: the SHA-256 of its config template) is signed with it."""
    if expires_ms <= now_ms:
        raise SpawnError("bad_invitation", "an invitation must expire after it is made")
    payload = {"id": secrets.token_hex(16), "parent": key.did, "kind": kind, "name": name, "depth": depth,
               "expires": format_ms(expires_ms), "bundle_hash": bundle_hash,
               "addresses": list(addresses)[:MAX_ADDRESSES]}
    if config_hash is not None:
        payload["config_hash"] = config_hash
    try:
        return build_container(key, INVITATION_CLASS, payload, timestamp_ms=now_ms, class_version=CLASS_VERSION)
    except ContainerError as exc:
        raise SpawnError("bad_invitation", f"cannot make the invitation: {exc.reason}") from None


def record_invitation(db: Database, inv: Container, now_ms: int) -> None:
    """The parent's row for an invitation it made: what accept_hello checks a hello against."""
    p = inv.payload
    with db.transaction() as conn:
        conn.execute("INSERT INTO spawn_invitations (id, container, kind, name, depth, bundle_hash, created_ms,"
                     " expires_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     (p["id"], inv.did, p["kind"], p["name"], p["depth"], p["bundle_hash"], now_ms,
                      parse_ms(p["expires"])))


def check_invitation(data: bytes, *, now_ms: int, skew_ms: int = SKEW_MS) -> Container:
    """The invitation in ``data``, verified: signature (by the parent it names), class, not expired
    (``skew_ms`` of grace for the two clocks). SpawnError bad_signature, bad_invitation or
    invitation_expired."""
    inv = _decode(data, now_ms, INVITATION_CLASS, "bad_invitation")
    if inv.payload["parent"] != inv.sender_did:
        raise SpawnError("bad_invitation", "the invitation names another parent than the one who signed it")
    if now_ms >= parse_ms(inv.payload["expires"]) + skew_ms:
        raise SpawnError("invitation_expired", f"the invitation expired at {inv.payload['expires']}")
    return inv


def make_hello(child_key: NodeKey, invitation: bytes, addresses: list[str], now_ms: int,
               host: str | None = None) -> Container:
    """The child's first word to its parent, signed with the child's new key."""
    payload = {"invitation": bytes(invitation), "child": child_key.did, "addresses": list(addresses)[:MAX_ADDRESSES],
               "host": (host if host is not None else socket.gethostname())[:255]}
    try:
        return build_container(child_key, HELLO_CLASS, payload, timestamp_ms=now_ms, class_version=CLASS_VERSION)
    except ContainerError as exc:
        raise SpawnError("bad_hello", f"cannot make the hello: {exc.reason}") from None


def accept_hello(db: Database, hello: Container, *, parent_did: str, now_ms: int, skew_ms: int = SKEW_MS) -> dict:
    """Accept a verified hello for one of this parent's invitations, at most once, and record the child.

    The invitation is claimed (``used_by_did``) by a conditional update, then the child recorded;
    a failure to record gives the claim back. Inside the node both run in one call on the store's
    single writer, so no other write of the node comes between them. The same child sending its
    hello again after it was accepted is answered ``accepted`` again (its ack may have been lost).
    SpawnError bad_hello, bad_signature, bad_invitation, not_for_us, unknown_invitation,
    invitation_used, invitation_expired."""
    if hello.cls != HELLO_CLASS or hello.head.get("class_version") != CLASS_VERSION:
        raise SpawnError("bad_hello", f"not a {HELLO_CLASS} {CLASS_VERSION} container")
    p = hello.payload
    if type(p) is not dict or p.get("child") != hello.sender_did:
        raise SpawnError("bad_hello", "the hello names another child than the one who signed it")
    inv = _decode(p["invitation"], now_ms, INVITATION_CLASS, "bad_invitation")
    if inv.sender_did != parent_did or inv.payload["parent"] != parent_did:
        raise SpawnError("not_for_us", "the invitation was signed by another parent")
    child_did, inv_id = hello.sender_did, inv.payload["id"]
    row = _invitation_row(db, inv_id)
    if row is None or row["container"] != inv.did:
        raise SpawnError("unknown_invitation", f"this parent made no invitation {inv_id}")
    answer = {"outcome": "accepted", "child": child_did, "invitation": inv_id, "name": row["name"],
              "kind": row["kind"], "depth": row["depth"], "again": False}
    if row["used_by_did"] == child_did:
        return dict(answer, again=True)
    if row["used_by_did"] is not None:
        raise SpawnError("invitation_used", f"invitation {inv_id} was used by another node already")
    if now_ms >= row["expires_ms"] + skew_ms:
        raise SpawnError("invitation_expired", f"invitation {inv_id} expired at {format_ms(row['expires_ms'])}")
    if inv.payload["bundle_hash"] != row["bundle_hash"]:
        raise SpawnError("bad_invitation", "the invitation's bundle hash is not the one this parent recorded")
    _claim(db, inv_id, child_did, now_ms)
    host = shown_host(p.get("host"))
    # a remote child's loopback addresses would name the parent's own host: never recorded
    record = family.ChildRecord(did=child_did, peer_id=did_to_peer_id(child_did), name=row["name"], kind=row["kind"],
                                depth=row["depth"], autostart="none", home=None, host=host, invitation_id=inv_id,
                                addresses=[a for a in p["addresses"] if type(a) is str and not a.startswith(LOOPBACK)])
    try:
        family.record_child(db, record, now_ms)
    except BaseException:
        _release(db, inv_id, child_did)
        raise
    return dict(answer, host=host)


def _decode(data, now_ms: int, cls: str, code: str) -> Container:
    if type(data) is not bytes or len(data) > MAX_INVITATION_BYTES:
        raise SpawnError(code, f"the {cls} must be a container of at most {MAX_INVITATION_BYTES} bytes")
    try:
        c = decode_container(data, now_ms=now_ms)
    except ContainerError as exc:
        raise SpawnError("bad_signature" if exc.code == "bad_signature" else code,
                         f"the {cls} does not verify: {exc.code}: {exc.reason}") from None
    if c.cls != cls or c.head.get("class_version") != CLASS_VERSION or not c.known_class or type(c.payload) is not dict:
        raise SpawnError(code, f"not a {cls} {CLASS_VERSION} container")
    return c


def _invitation_row(db: Database, inv_id: str) -> dict | None:
    return family.one_row(db, "reading an invitation", "SELECT id, container, kind, name, depth, bundle_hash,"
                          " expires_ms, used_by_did FROM spawn_invitations WHERE id = ?", (inv_id,))


def _claim(db: Database, inv_id: str, child_did: str, now_ms: int) -> None:
    with db.transaction() as conn:
        claimed = conn.execute("UPDATE spawn_invitations SET used_by_did = ?, used_ms = ?"
                               " WHERE id = ? AND used_by_did IS NULL", (child_did, now_ms, inv_id)).rowcount
    if claimed != 1:  # another process's write came between the read and the claim
        raise SpawnError("invitation_used", f"invitation {inv_id} was used by another node already")


def _release(db: Database, inv_id: str, child_did: str) -> None:
    with db.transaction() as conn:
        conn.execute("UPDATE spawn_invitations SET used_by_did = NULL, used_ms = NULL"
                     " WHERE id = ? AND used_by_did = ?", (inv_id, child_did))
