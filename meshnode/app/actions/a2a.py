"""The person's controls of the A2A face's held queue and blocks: what unknown parties' messages wait
(``a2a_held``), rejecting many at once (``a2a_reject``: all, one party's, one address's or network's),
and blocking a party or an address (``a2a_block``, ``a2a_unblock``, ``a2a_blocks``). The person's
alone: a held message is an outsider's text, and what gets through to the agent is the person's to
decide. In the running node a block counts at once: the face checks the blocks in memory
(``app.a2a_blocks``, a records.a2a.blocks.BlockSet these actions change with the table); with the
node stopped, the table is what the next start loads. What a rejection or a block took from the
agent's way is counted in ``a2a_dropped{reason}`` and told to the agent (context 4).
"""

from __future__ import annotations

from meshnode.app.actor import Actor, decided_by
from meshnode.app.context import App
from meshnode.base.errors import MeshnodeError
from meshnode.records.a2a import blocks, held_queue


def _text(value, name: str, limit: int = blocks.MAX_TARGET_CHARS) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise MeshnodeError("bad_arguments", f"{name} is a text of 1 to {limit} characters")
    return value.strip()


async def a2a_held(app: App, actor: Actor, limit: int = 200) -> list[dict]:
    """The held messages waiting for the person, oldest first: party, claimed sender, address, subnet,
    the message as the agent would read it, when it expires."""
    decided_by(actor, "reads the messages held for them")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= held_queue.MAX_LISTED:
        raise MeshnodeError("bad_arguments", f"limit is a number from 1 to {held_queue.MAX_LISTED}")
    return await app.store.read(held_queue.listing, app.clock(), limit)


async def a2a_reject(app: App, actor: Actor, all: bool = False, party: str | None = None,
                     address: str | None = None) -> dict:
    """Reject held messages at once: every one (``all``), or those of ``party`` (its key or the sender it
    claims) and/or from ``address`` (an address or a network). ``{rejected: [ids], count}``."""
    by = decided_by(actor, "rejects held messages")
    party, address = _text(party, "party"), _text(address, "address")
    if not isinstance(all, bool) or bool(all) == (party is not None or address is not None):
        raise MeshnodeError("bad_arguments", "reject all held messages (all), or name a party or an address,"
                                             " not both")
    ids = await app.store.write(held_queue.reject, app.clock(), by, party, address)
    _count(app, "rejected", len(ids))
    return {"rejected": ids, "count": len(ids)}


def _count(app: App, reason: str, n: int) -> None:
    if app.metrics is not None and n:
        app.metrics.inc("a2a_dropped", n, reason=reason)


async def a2a_block(app: App, actor: Actor, target: str) -> dict:
    """Block a party (a known party's name, a sender an unknown party claims, a party's key) or an
    address or network (``192.0.2.7``, ``203.0.113.0/24``): its requests get HTTP 403 from then on,
    and its held messages are rejected now."""
    by = decided_by(actor, "blocks parties")
    out = await app.store.write(blocks.block, _text(target, "target") or "", app.clock(), by)
    if app.a2a_blocks is not None:
        app.a2a_blocks.add(out["kind"], out["target"])
    _count(app, "rejected", len(out["rejected"]))
    _count(app, "blocked", out["dropped"]["approved"] + out["dropped"]["unread"])
    return out


async def a2a_unblock(app: App, actor: Actor, target: str) -> dict:
    """Lift a block (named as it was given, or as ``a2a_blocks`` lists it)."""
    decided_by(actor, "lifts blocks")
    if not await app.store.write(blocks.unblock, _text(target, "target") or ""):
        raise MeshnodeError("not_found", f"{target[:100]!r} is not blocked")
    lifted = blocks.target_of(target)[1]
    if app.a2a_blocks is not None:
        app.a2a_blocks.remove(lifted)
    return {"target": lifted, "unblocked": True}


async def a2a_blocks(app: App, actor: Actor) -> list[dict]:
    """The blocks, oldest first: target, kind (party or address), when, by which face."""
    decided_by(actor, "reads the blocks")
    return await app.store.read(blocks.listing)
