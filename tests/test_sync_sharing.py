"""Sync sessions over what each store may share and wants: both sides end with exactly what
the sharing rules permit and their wants accept, nothing else crosses, nothing private ever
does, and the session stays one pass when the wants agree."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meshnode.base.container import ContainerError, build_container
from meshnode.base.identity.keys import NodeKey
from meshnode.net.mesh_sync import _did_for, _digest
from meshnode.domain.notes import make_note
from meshnode.store import Database
from meshnode.store.removal import remove_containers
from meshnode.store.sharing import may_share, set_friend, shareable
from meshnode.domain.sync.index_cache import IndexCache
from meshnode.domain.sync.selective import EVERYTHING, Want, tags_of
from meshnode.domain.sync.session import INITIATOR, RESPONDER, Entry, Session
from meshnode.base.identity.did import did_to_peer_id

KEYS = [NodeKey(bytes([i]) * 32) for i in range(1, 5)]
X, Y = KEYS[0].did, KEYS[1].did  # the two nodes that sync; KEYS[2:] are other authors
T0 = 1_800_000_000_000
TAGS = ["mesh", "ml", "art"]


def run_session(dbx: Database, dby: Database, want_x: Want, want_y: Want,
                indexes=(None, None)) -> tuple[set, set, Session]:
    """X starts a session with Y; returns (DIDs moved to Y, DIDs moved to X, X's session).
    ``indexes``: X's and Y's sync indexes kept between sessions (None: none kept)."""
    sides = {}
    for db, me, peer, role, want, kept in ((dbx, X, Y, INITIATOR, want_x, indexes[0]),
                                           (dby, Y, X, RESPONDER, want_y, indexes[1])):
        rows = shareable(db, peer, me)
        catalog = [Entry(ts, _digest(d), cls, frozenset(tags)) for ts, d, cls, tags in rows]
        sides[me] = Session(role, catalog, want, indexes=kept), {_digest(d): d for _, d, _, _ in rows}
    sx, sy = sides[X][0], sides[Y][0]
    in_flight = [(sy, m) for m in sx.start()]
    while in_flight:
        receiver, message = in_flight.pop(0)
        other = sx if receiver is sy else sy
        in_flight += [(other, m) for m in receiver.receive(message)]
    assert sx.done and sy.done
    to_y = {sides[X][1][i] for i in sx.push} | {_did_for(i) for i in sy.fetch}
    to_x = {sides[Y][1][i] for i in sy.push} | {_did_for(i) for i in sx.fetch}
    # the transfer, with the sharing rule checked again on the giving side
    assert all(may_share(dbx, d, Y, X) for d in to_y) and all(may_share(dby, d, X, Y) for d in to_x)
    for did in to_y:
        dby.put_container(dbx.load_container(did, now_ms=T0), received_at_ms=T0, received_from=X)
    for did in to_x:
        dbx.put_container(dby.load_container(did, now_ms=T0), received_at_ms=T0, received_from=Y)
    return to_y, to_x, sx


items = st.lists(
    st.tuples(st.integers(0, 3),                                   # author
              st.sampled_from(["private", "public", "friends", "diary", "concept", "vote"]),
              st.sets(st.sampled_from([k.did for k in KEYS]), min_size=1, max_size=3),  # recipients
              st.sets(st.sampled_from(TAGS), max_size=2),          # tags
              st.booleans(), st.booleans()),                       # held by X, held by Y
    max_size=25,
)
wants = st.one_of(st.just(EVERYTHING), st.builds(
    Want,
    st.one_of(st.none(), st.sets(st.sampled_from(["note", "diary_entry", "semantic_node", "vote"])).map(frozenset)),
    st.one_of(st.none(), st.sets(st.sampled_from(TAGS)).map(frozenset)),
    st.one_of(st.none(), st.integers(T0, T0 + 25)),
))


def make_item(i: int, author: int, kind: str, recipients: set, tags: set):
    key, t = KEYS[author], T0 + i
    if kind in ("private", "public", "friends"):
        text = f"note {i} " + " ".join(f"#{tag}" for tag in sorted(tags))
        return make_note(key, text, now_ms=t, audience=kind,
                         recipients=sorted(recipients) if kind == "friends" else None)
    if kind == "vote":  # votes are for anyone to check
        return build_container(key, "vote", {"target_did": KEYS[0].did, "vote_value": 1, "vote_type": "approval"},
                               timestamp_ms=t, head_extra={"tags": sorted(tags)} if tags else None)
    if kind == "diary":
        return build_container(key, "diary_entry", {"content": f"entry {i}", "topics": sorted(tags)}, timestamp_ms=t)
    return build_container(key, "semantic_node", {"label": f"concept {i}"}, timestamp_ms=t,
                           head_extra={"tags": sorted(tags)} if tags else None)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items, wants, wants, st.booleans(), st.booleans())
def test_sessions_move_exactly_what_is_shared_and_wanted(specs, want_x, want_y, x_befriends_y, y_befriends_x):
    with tempfile.TemporaryDirectory() as tmp:
        dbx, dby = Database(Path(tmp) / "x.db"), Database(Path(tmp) / "y.db")
        try:
            if x_befriends_y:
                set_friend(dbx, Y, did_to_peer_id(Y), T0)
            if y_befriends_x:
                set_friend(dby, X, did_to_peer_id(X), T0)
            made = []
            for i, (author, kind, recipients, tags, at_x, at_y) in enumerate(specs):
                if kind == "private":  # a private note lives only with its author
                    at_x, at_y = author == 0, author == 1
                c = make_item(i, author, kind, recipients, tags)
                made.append(c)
                for held, db in ((at_x, dbx), (at_y, dby)):
                    if held:
                        db.put_container(c, received_at_ms=T0, local={"tags": []})
            before_x = {d for (d,) in dbx.conn.execute("SELECT did FROM containers")}
            before_y = {d for (d,) in dby.conn.execute("SELECT did FROM containers")}
            to_y, to_x, session = run_session(dbx, dby, want_x, want_y)
            after_x = {d for (d,) in dbx.conn.execute("SELECT did FROM containers")}
            after_y = {d for (d,) in dby.conn.execute("SELECT did FROM containers")}

            def permitted(c, receiver: str, giver_befriends_receiver: bool, want: Want) -> bool:
                if not want.matches(c.cls, c.timestamp_ms, tags_of(c)):
                    return False
                if c.cls == "vote":
                    return True
                if c.cls != "note":
                    return giver_befriends_receiver
                a = c.payload["audience"]
                return a == "public" or (a == "friends" and receiver in c.head.get("recipient", []))

            assert after_x == before_x | {c.did for c in made if c.did in before_y
                                          and permitted(c, X, y_befriends_x, want_x)}
            assert after_y == before_y | {c.did for c in made if c.did in before_x
                                          and permitted(c, Y, x_befriends_y, want_y)}
            private = {c.did for c in made if c.cls == "note" and c.payload["audience"] == "private"}
            assert not (to_x | to_y) & private  # nothing private ever crosses
            assert session.passes == (1 if want_x == want_y else 2)
        finally:
            dbx.close()
            dby.close()


def test_indexes_kept_between_sessions_follow_admission_removal_unfriending_and_restarts(tmp_path):
    """Each node keeps its sync index from one session to the next (as the Mesh does): what it offers
    is still exactly what it may share now. X admits and removes containers and stops being Y's
    friend between sessions; its diary entries must stop being offered, the removed note comes back
    from Y, and a restart (nothing kept) changes nothing."""
    dbx, dby = Database(tmp_path / "x.db"), Database(tmp_path / "y.db")
    kept = IndexCache(kept_min=0), IndexCache(kept_min=0)
    try:
        set_friend(dbx, Y, did_to_peer_id(Y), T0)
        first = [make_item(i, 0, kind, {Y}, set()) for i, kind in enumerate(["public"] * 3 + ["diary"] * 3)]
        for c in first + [make_item(9, 0, "private", {Y}, set())]:
            dbx.put_container(c, received_at_ms=T0, local={"tags": []})
        to_y, to_x, _ = run_session(dbx, dby, EVERYTHING, EVERYTHING, kept)
        assert to_y == {c.did for c in first} and not to_x
        later = [make_item(10, 0, "public", set(), set()), make_item(11, 0, "diary", set(), set())]
        for c in later:
            dbx.put_container(c, received_at_ms=T0, local={"tags": []})
        with dbx.transaction() as conn:
            assert remove_containers(conn, [first[0].did, first[3].did], dbx.hooks) == 2
        set_friend(dbx, Y, did_to_peer_id(Y), T0, friend=False)
        to_y, to_x, _ = run_session(dbx, dby, EVERYTHING, EVERYTHING, kept)
        assert to_y == {later[0].did}  # not the diary entry: Y is no longer a friend
        assert to_x == {first[0].did}  # the public note X removed (Y offers no diary entry: not X's friend)
        assert kept[0].updates == 1 and kept[1].updates == 1  # the kept indexes were updated, not built
        c = make_item(12, 0, "public", set(), set())
        dbx.put_container(c, received_at_ms=T0, local={"tags": []})
        to_y, to_x, _ = run_session(dbx, dby, EVERYTHING, EVERYTHING, (IndexCache(kept_min=0), kept[1]))  # X restarted
        assert to_y == {c.did} and not to_x
    finally:
        dbx.close()
        dby.close()


def test_a_forwardable_note_travels_friend_to_friend_within_its_hop_limit(tmp_path):
    """A -> B (recipient) -> C (B's friend) -> D (C's friend): forward=1 reaches C but not D;
    forward=2 reaches D; forward=0 stops at B. Each hop is a real sync session."""
    a, b, c, d = KEYS
    for forward, reach in ((0, "b"), (1, "c"), (2, "d")):
        dbs = {n: Database(tmp_path / f"{forward}-{n}.db") for n in "abcd"}
        try:
            for left, right in (("a", "b"), ("b", "c"), ("c", "d")):
                for one, other in ((left, right), (right, left)):
                    set_friend(dbs[one], KEYS["abcd".index(other)].did, did_to_peer_id(KEYS["abcd".index(other)].did), T0)
            note = make_note(a, "pass it on", now_ms=T0, audience="friends", recipients=[b.did], forward=forward)
            dbs["a"].put_container(note, received_at_ms=T0)
            for left, right in (("a", "b"), ("b", "c"), ("c", "d")):
                _pair_session(dbs[left], dbs[right], KEYS["abcd".index(left)].did, KEYS["abcd".index(right)].did)
            held = [n for n in "abcd" if dbs[n].get_container_bytes(note.did) is not None]
            assert held == list("abcd"[: "abcd".index(reach) + 1]), (forward, held)
        finally:
            for db in dbs.values():
                db.close()


def _pair_session(db1: Database, db2: Database, did1: str, did2: str) -> None:
    global X, Y
    saved = X, Y
    X, Y = did1, did2
    try:
        run_session(db1, db2, EVERYTHING, EVERYTHING)
    finally:
        X, Y = saved


def test_knowledge_travels_friend_to_friend_within_its_hop_limit(tmp_path):
    """A -> B (A's friend) -> C (B's friend) -> D (C's friend), one real sync session per hop:
    a diary entry, concept or link with forward=0 stops at B, forward=1 at C, and with no
    limit reaches D."""
    from meshnode.domain import knowledge

    a, b, c, d = KEYS
    builders = {
        "diary": lambda forward: knowledge.make_diary_entry(a, "what I learned", now_ms=T0, forward=forward),
        "concept": lambda forward: knowledge.make_concept(a, "mesh", now_ms=T0, forward=forward),
        "link": lambda forward: knowledge.make_link(a, c.did, "related-to", [d.did], now_ms=T0, forward=forward),
    }
    for kind, build in builders.items():
        for forward, reach in ((0, "b"), (1, "c"), (None, "d")):
            dbs = {n: Database(tmp_path / f"{kind}-{forward}-{n}.db") for n in "abcd"}
            try:
                for left, right in (("a", "b"), ("b", "c"), ("c", "d")):
                    for one, other in ((left, right), (right, left)):
                        peer = KEYS["abcd".index(other)].did
                        set_friend(dbs[one], peer, did_to_peer_id(peer), T0)
                item = build(forward)
                dbs["a"].put_container(item, received_at_ms=T0)
                for _ in range(2):  # a second round: nothing more may cross
                    for left, right in (("a", "b"), ("b", "c"), ("c", "d")):
                        _pair_session(dbs[left], dbs[right], KEYS["abcd".index(left)].did,
                                      KEYS["abcd".index(right)].did)
                held = [n for n in "abcd" if dbs[n].get_container_bytes(item.did) is not None]
                assert held == list("abcd"[: "abcd".index(reach) + 1]), (kind, forward, held)
                # a holder past the limit does not even offer it (nor give it when asked by DID)
                if reach != "d":
                    beyond = "abcd"[: "abcd".index(reach) + 2][-1]
                    holder = "abcd"[: "abcd".index(reach) + 1][-1]
                    assert not may_share(dbs[holder], item.did, KEYS["abcd".index(beyond)].did,
                                         KEYS["abcd".index(holder)].did)
            finally:
                for db in dbs.values():
                    db.close()


def test_knowledge_hop_limit_is_zero_or_one():
    from meshnode.domain import knowledge

    for bad in (2, -1, True):
        with pytest.raises(knowledge.KnowledgeError):
            knowledge.make_diary_entry(KEYS[0], "x", now_ms=T0, forward=bad)
    # a peer's container with forward 2 fails its class schema
    with pytest.raises(ContainerError) as info:
        build_container(KEYS[0], "diary_entry", {"content": "x", "forward": 2}, timestamp_ms=T0)
    assert info.value.code == "class_schema"
