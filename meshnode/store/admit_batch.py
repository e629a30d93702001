"""Admitting several containers from the network in one write transaction (``quotas.admit`` each).

The store syncs every commit to disk (``synchronous=FULL``), and each write is a hop to the
writer thread: a burst of gossip stored one container per transaction queued behind the disk
(issue 18: 50-200 ms a container on a busy machine, one after the other). Here each container
is admitted inside a SAVEPOINT of one outer transaction: its own failure (a GMP refusal, a
constraint) rolls back that container alone and is returned in its place; the batch commits,
and syncs, once. An error after which SQLite rolled the whole transaction back fails the batch.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterable, Iterator

from meshnode.base.container import Container
from meshnode.store.database import Database, sql_errors
from meshnode.store.quotas import Admission, Quotas, admit


class _Savepoints:
    """The writer Database as ``admit`` sees it inside the outer transaction: its transaction()
    is a SAVEPOINT (SQLite does not nest BEGIN)."""

    def __init__(self, db: Database):
        self._db = db
        self.conn = db.conn

    def __getattr__(self, name: str):
        return getattr(self._db, name)

    @contextmanager
    def transaction(self, busy_timeout_ms: int | None = None) -> Iterator:
        conn = self.conn
        with sql_errors("writing to the database"):
            conn.execute("SAVEPOINT admit_one")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK TO admit_one")
                conn.execute("RELEASE admit_one")
                raise
            conn.execute("RELEASE admit_one")


def admit_many(db: Database, items: Iterable[tuple[Container, int, str | None]], *, quotas: Quotas,
               known: Iterable[str], vouched: Iterable[str] = ()) -> list[Admission | Exception]:
    """``admit`` each (container, received_at_ms, received_from) in one transaction; per item its
    Admission, or the exception its admission raised (nothing of that item is stored). ``vouched``:
    DIDs of the containers a known peer forwarded (``admit``'s ``vouched``)."""
    known, vouched = frozenset(known), frozenset(vouched)
    out: list[Admission | Exception] = []
    with db.transaction():
        inner = _Savepoints(db)
        for c, received_at_ms, received_from in items:
            try:
                out.append(admit(inner, c, received_at_ms=received_at_ms, received_from=received_from,
                                 quotas=quotas, known=known, vouched=c.did in vouched))
            except Exception as exc:  # this container's own failure; the others go on
                if not db.conn.in_transaction:  # SQLite rolled the whole batch back (disk full, I/O error):
                    raise  # the next SAVEPOINT would commit the rest one by one; the batch failed
                out.append(exc)
    return out
