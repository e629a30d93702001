"""What the api_* modules share, so that a route of one part reads and refuses as a route of another:
the arguments every listing and every DID takes, the DIDs a person may type (a whole DID, a short id,
a peer's name) resolved as the CLI resolves them, and the numbers and lists of texts given in a request."""

from __future__ import annotations

from meshnode.app.actions.names import MAX_AGENT_TEXT, agent_of
from meshnode.base.errors import MeshnodeError
from meshnode.store import short_ids
from meshnode.faces.web.endpoint import Arg

MAX_DID = MAX_AGENT_TEXT  # a DID is ~60 characters; a short id or a name fewer

MAX_LIMIT = 500  # rows of one page


def limit(what: str = "rows", default: int = 50) -> Arg:
    """The ``limit`` of a listing."""
    return Arg(int, min=1, max=MAX_LIMIT, default=default, doc=f"at most this many {what}")


LIMIT = limit()
AGENT = Arg(str, required=True, max=MAX_DID, doc="an agent: its DID (did:key:...), name or short id (key:...)")
CONTAINER = Arg(str, required=True, max=MAX_DID, doc="a container DID or the short id a listing shows")


async def agent(services, text: str) -> str:
    """The whole agent DID ``text`` names (``not_found``/``bad_id``/``ambiguous_id`` otherwise): the
    actions' own resolver (``app.actions.names.agent_of``, which reads ``services.store``)."""
    return await agent_of(services, text)


async def container(services, text: str, noun: str = "container") -> str:
    """The whole container DID ``text`` names (held here, when it is a short id)."""
    if short_ids.is_whole(text):
        return short_ids.resolve_container(None, text, noun)
    return await services.read(short_ids.resolve_container, text, noun)


async def agents(services, name: str, items: list | None) -> list[str]:
    """A list argument of agents, each named as ``agent`` takes it, as whole DIDs."""
    return [await agent(services, text) for text in texts(name, items, MAX_DID) or ()]


def number(text: str, name: str, what: str) -> int:
    """A path parameter that is a row's number (path parameters arrive as text)."""
    if not (text.isascii() and text.isdigit()) or len(text) > 18:  # "²".isdigit(), int("²") fails
        raise MeshnodeError("bad_arguments", f"{name} must be {what}, not {text[:40]!r}")
    return int(text)


def texts(name: str, items: list | None, max_len: int = 256) -> list[str] | None:
    """A list argument whose items must be text of 1 to ``max_len`` characters (``parse_args``
    checks the list, not its items)."""
    if items is None:
        return None
    for item in items:
        if not isinstance(item, str) or not 0 < len(item) <= max_len:
            raise MeshnodeError("bad_arguments", f"each item of {name} is text of 1 to {max_len} characters")
    return items
