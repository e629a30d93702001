"""The node's last run as its home remembers it: the ``main_process`` row ``node``, which
``meshnode run`` writes when it starts (``stop`` 0) and when it stops cleanly (``stop`` 1), with
the time of each. A node that was killed leaves its start standing; who reads it must ask the
control socket whether a node answers now (``meshnode status`` does)."""

from __future__ import annotations

from meshnode.base.container.timefmt import parse_ms
from meshnode.base.container.errors import ContainerError
from meshnode.store.database import Database, sql_errors


def last_run(db: Database) -> dict | None:
    """``{"at_ms", "stopped"}``: when the last run started (``stopped`` False) or ended cleanly
    (True); None when no node ever ran on this home, or the time cannot be read."""
    with sql_errors("reading the node's last run"):
        row = db.conn.execute("SELECT heartbeat, stop FROM main_process WHERE name = 'node'").fetchone()
    if row is None or row[0] is None:
        return None
    try:
        return {"at_ms": parse_ms(row[0]), "stopped": bool(row[1])}
    except ContainerError:  # a row written by hand: no time to tell
        return None
