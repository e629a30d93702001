"""What the person calls agents: petnames set and unset, the names every face shows, and the one
way an action reads an agent a person named (a DID, a petname, an announced name, a short id).

A petname is the person's alone (kept on this node, never sent): only the person sets one. The
names are read by this node's own side (the person, its agent, the node), not by outside parties.
"""

from __future__ import annotations

from meshnode.app.actor import THIS_NODE, Actor, allow, decided_by
from meshnode.app.context import App
from meshnode.base.errors import MeshnodeError
from meshnode.store import names as store_names, short_ids

MAX_AGENT_TEXT = 256  # a DID is ~56 characters; a name or short id fewer
MAX_DIDS = 1000  # DIDs named at once


async def agent_of(app: App, text: str) -> str:
    """The whole agent DID ``text`` names (``short_ids.resolve_agent``): the one resolver of the
    actions that take an agent, so the CLI, the web and MCP take the same names. Only ``app.store``
    is read: the web's routes resolve with their Services (``faces/web/ids.agent``)."""
    if not isinstance(text, str) or not 0 < len(text) <= MAX_AGENT_TEXT:
        raise MeshnodeError("bad_request", f"an agent is named by 1 to {MAX_AGENT_TEXT} characters")
    if short_ids.is_whole(text):
        return short_ids.resolve_agent(None, text)
    return await app.store.read(short_ids.resolve_agent, text)


async def other_agent(app: App, text: str, what: str) -> str:
    """``agent_of``, refusing this node itself (a ping, friend or sync of oneself did nothing
    useful and put the node in its own peers list)."""
    did = await agent_of(app, text)
    own = _own(app) or await app.store.read(store_names.home_did)
    if did == own:
        raise MeshnodeError("self", f"{text[:80]!r} is this node itself: {what} takes another agent")
    return did


def _own(app: App) -> str | None:
    return app.key.did if app.key is not None else None


async def name_set(app: App, actor: Actor, agent: str, petname: str) -> dict:
    """Call the agent ``agent`` names ``petname`` on this node (it replaces its petname, if any)."""
    decided_by(actor, "gives agents petnames")
    did = await agent_of(app, agent)
    return (await app.store.write(store_names.set_petname, did, petname, app.clock())).fields()


async def name_unset(app: App, actor: Actor, agent: str) -> dict:
    """Forget the petname of the agent ``agent`` names (its petname, DID or short id)."""
    decided_by(actor, "removes petnames")
    did = await agent_of(app, agent)
    return (await app.store.write(store_names.unset_petname, did)).fields()


async def names(app: App, actor: Actor, dids: list[str] | None = None) -> list[dict]:
    """Every agent known here with what it is called (``did``, ``name`` as shown, ``petname``,
    ``announced``, ``ambiguous``, ``own``), or only those of ``dids`` (an unknown one by its short id)."""
    allow(actor, THIS_NODE, "reading names")
    if dids is not None and (not isinstance(dids, list) or len(dids) > MAX_DIDS
                             or not all(isinstance(d, str) and 0 < len(d) <= MAX_AGENT_TEXT for d in dids)):
        raise MeshnodeError("bad_request", f"dids is a list of at most {MAX_DIDS} DIDs")
    table = await app.store.read(store_names.known, _own(app))
    if dids is None:
        return sorted((n.fields() for n in table.values()), key=lambda f: (not f["own"], f["name"].casefold()))
    return [(table[d] if d in table else store_names.Name(d, short_ids.short_agent_id(d))).fields() for d in dids]
