"""What a wake context needs from the store beyond the core's events (design 8), in one read:
display names of the peers it mentions and, for the node's own core, its tasks that need something."""

from __future__ import annotations

from meshnode.base.container import format_ms
from meshnode.records.gmp import reads as gmp_reads
from meshnode.engines.reactor.wake_context import SECTION_ITEMS


def context_reads(db, dids: list[str], own_tasks: bool, self_did: str, now: int) -> dict:
    """The names of ``dids`` (those known) and, when ``own_tasks``, the open tasks this node holds
    or created whose due state asks for something (unassigned, due, overdue, fork...)."""
    out: dict = {"names": {d: n for d, n in gmp_reads.names(db, dids).items() if n}}
    if own_tasks:
        tasks = gmp_reads.open_tasks_of(db, self_did, now, limit=SECTION_ITEMS)["tasks"]
        out["due_tasks"] = [{"lineage": t["lineage"], "title": t["title"], "status": t["status"], "due": t["due"],
                             "next_check_at": _iso(t["next_check_ms"]), "deadline": _iso(t["deadline_ms"])}
                            for t in tasks if t["due"] is not None]
    return out


def _iso(ms) -> str | None:
    return format_ms(ms) if isinstance(ms, int) and 0 <= ms < 253402300800000 else None
