"""agent_peers, liveness and standing rows."""

from __future__ import annotations

from meshnode.base.identity.did import did_to_peer_id
from meshnode.store import Database
from meshnode.store.peers import active_bans, list_peers, save_standing, set_liveness, upsert_peer

DID = "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp"
PEER = "12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN"
T0 = 1_800_000_000_000


def test_peer_rows_follow_announces_liveness_and_standing(tmp_path):
    db = Database(tmp_path / "x.db")
    try:
        upsert_peer(db, DID, peer_id=PEER, now_ms=T0, source="bootstrap", addresses=["/ip4/127.0.0.1/tcp/1"])
        upsert_peer(db, DID, peer_id=PEER, now_ms=T0 + 5, source="discovery", name="alice",
                    interests=["ai"], announce_did="did:hmp:container:uEiAx")
        set_liveness(db, DID, state="ok", last_heard_ms=T0 + 5, last_seq=3, now_ms=T0 + 5)
        [row] = list_peers(db)
        assert (row["name"], row["source"], row["status"], row["liveness"]) == ("alice", "bootstrap", "online", "ok")
        assert row["addresses"] == ["/ip4/127.0.0.1/tcp/1"] and row["interests"] == ["ai"]
        set_liveness(db, DID, state="stale", last_heard_ms=T0 + 5, last_seq=3, now_ms=T0 + 60_000)
        save_standing(db, DID, {"valid": 2, "invalid": 5, "invalid_by_code": {"bad_signature": 5},
                                "rate_limited": 0, "banned_until_ms": 0}, T0)
        [row] = list_peers(db)
        assert (row["status"], row["liveness"], row["invalid"]) == ("offline", "stale", 5)
        db.conn.execute("UPDATE agent_peers SET status = 'blacklisted'")
        set_liveness(db, DID, state="ok", last_heard_ms=T0 + 70_000, last_seq=4, now_ms=T0 + 70_000)
        assert list_peers(db)[0]["status"] == "blacklisted"  # liveness never lifts a ban
    finally:
        db.close()


def test_active_bans_are_those_not_over_yet(tmp_path):
    db = Database(tmp_path / "x.db")
    try:
        other = "did:key:z6MkfcWMAQk7nLEaEWRQzZLNp7tqgQVjXpJBcAxa6yBKgBzi"
        standing = {"valid": 0, "invalid": 20, "invalid_by_code": {"bad_frame": 20}, "rate_limited": 0}
        for did, until in ((DID, T0 + 600_000), (other, T0 - 1)):
            upsert_peer(db, did, peer_id=did_to_peer_id(did), now_ms=T0, source="exchange")
            save_standing(db, did, {**standing, "banned_until_ms": until}, T0)
        assert active_bans(db, T0) == {DID: T0 + 600_000}
        assert active_bans(db, T0 + 600_000) == {}
    finally:
        db.close()


def test_liveness_rows_are_the_peers_with_a_liveness_and_a_row_not_every_stranger_met(tmp_path):
    from meshnode.base.identity.keys import NodeKey
    from meshnode.store.peers import liveness_rows

    db = Database(tmp_path / "x.db")
    try:
        strangers = [NodeKey.generate() for _ in range(20)]  # a swarm's identities: rows, no liveness
        for k in strangers:
            upsert_peer(db, k.did, peer_id=k.peer_id, now_ms=T0, source="exchange")
        upsert_peer(db, DID, peer_id=PEER, now_ms=T0, source="exchange")
        set_liveness(db, DID, state="quiet", last_heard_ms=T0 + 5, last_seq=1, now_ms=T0 + 5)
        gone = strangers[0]  # a row deleted (forgotten) with its liveness left behind is not counted
        set_liveness(db, gone.did, state="ok", last_heard_ms=T0, last_seq=1, now_ms=T0)
        db.conn.execute("DELETE FROM agent_peers WHERE id = ?", (gone.did,))
        assert liveness_rows(db) == [{"did": DID, "liveness": "quiet", "last_heard_ms": T0 + 5}]
    finally:
        db.close()
