"""Reconciliation over what each store may share: both sides end with the union of what the
filter permits, nothing else crosses, and nothing private ever does."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meshnode.identity.keys import NodeKey
from meshnode.net.mesh_sync import _did_for, _digest
from meshnode.notes import make_note
from meshnode.store import Database
from meshnode.store.sharing import may_share, shareable_notes
from meshnode.sync.reconcile import Reconciler

KEYS = [NodeKey(bytes([i]) * 32) for i in range(1, 5)]
X, Y = KEYS[0].did, KEYS[1].did  # the two nodes that reconcile; KEYS[2:] are other authors
T0 = 1_800_000_000_000

notes = st.lists(
    st.tuples(st.integers(0, 3),                                   # author
              st.sampled_from(["private", "public", "friends"]),
              st.sets(st.sampled_from([k.did for k in KEYS]), min_size=1, max_size=3),  # recipients
              st.booleans(), st.booleans()),                       # held by X, held by Y
    max_size=25,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(notes)
def test_reconciled_stores_hold_exactly_what_they_may(specs):
    with tempfile.TemporaryDirectory() as tmp:
        dbx, dby = Database(Path(tmp) / "x.db"), Database(Path(tmp) / "y.db")
        try:
            made = []
            for i, (author, audience, recipients, at_x, at_y) in enumerate(specs):
                if audience == "private":  # a private note lives only with its author
                    at_x, at_y = author == 0, author == 1
                c = make_note(KEYS[author], f"note {i}", now_ms=T0 + i, audience=audience,
                              recipients=sorted(recipients) if audience == "friends" else None)
                made.append(c)
                for held, db in ((at_x, dbx), (at_y, dby)):
                    if held:
                        db.put_container(c, received_at_ms=T0, local={"tags": []})
            before_x = {d for _, d in dbx.conn.execute("SELECT 0, did FROM containers")}
            before_y = {d for _, d in dby.conn.execute("SELECT 0, did FROM containers")}
            offer_x = shareable_notes(dbx, Y)
            offer_y = shareable_notes(dby, X)
            rx = Reconciler([(ts, _digest(d)) for ts, d in offer_x])
            ry = Reconciler([(ts, _digest(d)) for ts, d in offer_y])
            message, receiver, other = rx.initiate(), ry, rx
            while message is not None:
                message = receiver.receive(message)
                receiver, other = other, receiver
            # the transfer, with the sharing rule checked again on the giving side
            to_y = {_did_for(i) for i in rx.have | ry.need}
            to_x = {_did_for(i) for i in ry.have | rx.need}
            assert all(may_share(dbx, d, Y) for d in to_y) and all(may_share(dby, d, X) for d in to_x)
            for did in to_y:
                dby.put_container(dbx.load_container(did, now_ms=T0), received_at_ms=T0)
            for did in to_x:
                dbx.put_container(dby.load_container(did, now_ms=T0), received_at_ms=T0)
            after_x = {d for (d,) in dbx.conn.execute("SELECT did FROM containers")}
            after_y = {d for (d,) in dby.conn.execute("SELECT did FROM containers")}

            def permitted(c, receiver_did):
                a = c.payload["audience"]
                return a == "public" or (a == "friends" and receiver_did in c.head.get("recipient", []))

            assert after_x == before_x | {c.did for c in made if c.did in before_y and permitted(c, X)}
            assert after_y == before_y | {c.did for c in made if c.did in before_x and permitted(c, Y)}
            private = {c.did for c in made if c.payload["audience"] == "private"}
            assert not (to_x | to_y) & private  # nothing private ever crosses
        finally:
            dbx.close()
            dby.close()
