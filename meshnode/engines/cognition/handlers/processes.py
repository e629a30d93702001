"""The store-side handlers of the process commands: list, mark handled, clean up (``processes`` starts
and stops them in the cycle's nursery).
"""

from __future__ import annotations

from meshnode.base.errors import MeshnodeError


def _list(db, key, now, args):
    where, params = ("WHERE status = ?", [args["status"]]) if "status" in args else ("", [])
    cur = db.conn.execute(f"SELECT id, argv, status, exit_code, started_at, ended_at, marked, task_id FROM processes"
                          f" {where} ORDER BY status != 'running', id DESC LIMIT ?", (*params, args.get("limit", 20)))
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def _mark(db, key, now, args):
    with db.transaction() as conn:
        row = conn.execute("SELECT status FROM processes WHERE id = ?", (args["id"],)).fetchone()
        if row is None:
            raise MeshnodeError("not_found", f"no process {args['id']}")
        if row[0] == "running":
            raise MeshnodeError("still_running", f"process {args['id']} is still running; stop it first")
        conn.execute("UPDATE processes SET marked = 1 WHERE id = ?", (args["id"],))
        conn.execute("UPDATE process_log SET status = 'close' WHERE name = ?", (f"process:{args['id']}",))
    return {"id": args["id"], "marked": True}


def _cleanup(db, key, now, args):
    cutoff = now - int(float(args.get("older_than_hours", 24)) * 3600 * 1000)
    with db.transaction() as conn:
        gone = [r[0] for r in conn.execute("SELECT id FROM processes WHERE marked = 1 AND ended_at <= ?", (cutoff,))]
        conn.executemany("DELETE FROM processes WHERE id = ?", [(i,) for i in gone])
        conn.executemany("DELETE FROM process_log WHERE name = ? AND status = 'close'",
                         [(f"process:{i}",) for i in gone])
    return {"deleted": len(gone)}


HANDLERS = {
    "process_list": _list,
    "process_mark": _mark,
    "process_cleanup": _cleanup,
}
