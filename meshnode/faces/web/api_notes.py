"""Routes of the notebook and CogSync knowledge (protocols/web.md 4.1): notes (list, show, add, read,
tags), edits, diary, concepts, links and search.

Writes and reads are the actions ``meshnode note|diary|concept|link|search ...`` call (``note_show``,
``search``; references resolved by ``references``, as the CLI resolves them). A note written
here is the person's, through the web (``Services.call``'s actor; its signed source ``user``). References to other containers are checked
as the CLI checks them (held here and of the right class, unless ``allow_dangling``)."""

from __future__ import annotations

from meshnode.domain import knowledge as cogsync
from meshnode.records import knowledge
from meshnode.base.errors import MeshnodeError
from meshnode.domain.notes import AUDIENCES, MAX_TEXT, SOURCES
from meshnode.faces.web import ids, reading
from meshnode.records.gmp.reads import names
from meshnode.faces.web.endpoint import Arg, Endpoint

_TEXT = Arg(str, max=256)
_TAGS = Arg(list, max=64, doc="tags, each 1 to 64 characters")
_PREVIOUS = Arg(list, max=64, doc="the versions this one updates (container DIDs or short ids)")
_DANGLING = Arg(bool, default=False, doc="refer to containers this node does not hold (refused otherwise)")
_FORWARD = Arg(int, min=0, max=cogsync.MAX_FORWARD,
               doc="hops past your friends it may travel (absent: no limit, friend to friend)")


# --- notes -----------------------------------------------------------------------------


async def notes(services, args):
    """``[{container_did, timestamp, topic, text, audience, tags, source, author_did, author_name, read,
    asked_kind, asked_via, asked_label, asked_id, approved_kind, approved_via}]`` (asked_*: who asked this
    node to write it, app.actor: asked_id is an A2A party's key id, ``known:<name>`` or ``unknown:<address>:<name>``;
    a peer's note: ``peer``) newest first, each with ``author`` (who wrote it, in words), ``author_kind``,
    ``at_ms`` and ``html`` (its Markdown, sanitized: faces.web.reading); the next page: ``before`` =
    the last row's ``container_did``."""
    rows = await services.call("notes", limit=args["limit"], before=args["before"], query=args["q"],
                               unread=args["unread"], source=args["source"], topic=args["topic"])
    return [reading.note(r, services.key.did) for r in rows]


async def note_show(services, args):
    did = await ids.container(services, args["did"], "note")
    shown = await services.call("note_show", did=did)
    found = await services.read(reading.provenance, [did])
    who = await services.read(names, [shown.get("agent_did")])
    return reading.written([{**shown, "author_name": who.get(shown.get("agent_did"))}], services.key.did, found,
                           author_key="agent_did", name_key="author_name")[0]


async def note_add(services, args):
    return await services.call("note_add", text=args["text"], topic=args["topic"], audience=args["audience"],
                               priority=args["priority"],
                               tags=ids.texts("tags", args["tags"], 64), forward=args["forward"])


async def note_read(services, args):
    return await services.call("note_read", did=await ids.container(services, args["did"], "note"))


async def note_tags(services, args):
    add, remove = ids.texts("add", args["add"], 64), ids.texts("remove", args["remove"], 64)
    return await services.call("note_tag", did=await ids.container(services, args["did"], "note"), add=add,
                               remove=remove)


# --- edits -----------------------------------------------------------------------------

_EDIT_NOUNS = {"diary": "diary entry", "concept": "concept", "link": "link", "note": "note"}
_EDIT_OPS = ("concept_update", "link_update", "diary_delete", "concept_delete", "link_delete", "note_update",
             "note_delete")
_EDIT_FIELDS = ("label", "description", "aliases", "tags", "relation", "targets", "inverse", "text")


async def edit(services, args):
    """A new version or a withdrawal (``meshnode concept|link|note update``, ``... delete``): ``{did, ...}``."""
    op = args["op"]
    ident = await ids.container(services, args["id"], _EDIT_NOUNS[op.split("_")[0]])
    fields = {k: args[k] for k in _EDIT_FIELDS if args[k] is not None}
    for name in ("aliases", "tags"):
        if name in fields:
            ids.texts(name, fields[name])
    if "targets" in fields:
        fields["targets"] = await _references(services, args, "targets", "semantic_node")
    if op.endswith("_update") and op != "note_update" and not fields:
        raise MeshnodeError("nothing_to_change", "give at least one field to change")
    if op == "note_update" and not fields.get("text"):
        raise MeshnodeError("bad_arguments", "note_update needs the note's new text")
    return await services.call("edit", op=op, id=ident, restore=args["restore"], **fields)


async def _references(services, args, name: str, cls: str) -> list[str] | None:
    """The containers ``args[name]`` names, resolved and checked as the CLI checks them."""
    given = args[name]
    if given is None:
        return None
    texts = [given] if isinstance(given, str) else ids.texts(name, given, ids.MAX_DID)
    return await services.call("references", texts=texts, cls=cls, what=name,
                               allow_dangling=args.get("allow_dangling", False))


# --- diary, concepts, links -------------------------------------------------------------------


_TEXT_OF = {"diary": "text", "concepts": "description", "links": "description"}


def _lister(cmd: str):
    """The listing of ``cmd``, each row with ``author`` (in words, by its provenance record or a
    peer's name), ``at_ms`` and ``html`` (faces.web.reading)."""
    async def handler(services, args):
        rows = await services.call(cmd, limit=args["limit"])
        found = await services.read(reading.provenance, [r.get("container_did") for r in rows])
        who = await services.read(names, [r.get("author_did") for r in rows])
        rows = [{**r, "author_name": who.get(r.get("author_did"))} for r in rows]
        return reading.written(rows, services.key.did, found, name_key="author_name", text_key=_TEXT_OF[cmd])
    handler.__name__ = f"list_{cmd}"
    return handler


async def diary_add(services, args):
    return await services.call("diary_add", text=args["text"], title=args["title"],
                               topics=ids.texts("topics", args["topics"]),
                               previous=await _references(services, args, "previous", "diary_entry"),
                               forward=args["forward"])


async def concept_add(services, args):
    return await services.call("concept_add", label=args["label"], description=args["description"],
                               aliases=ids.texts("aliases", args["aliases"]), tags=ids.texts("tags", args["tags"], 64),
                               previous=await _references(services, args, "previous", "semantic_node"),
                               forward=args["forward"])


async def link_add(services, args):
    source = (await _references(services, args, "source", "semantic_node"))[0]
    return await services.call("link_add", source=source, relation=args["relation"],
                               targets=await _references(services, args, "targets", "semantic_node"),
                               domain=args["domain"], inverse=args["inverse"], tags=ids.texts("tags", args["tags"], 64),
                               previous=await _references(services, args, "previous", "semantic_edges"),
                               forward=args["forward"])


async def search(services, args):
    """``[{kind: note|diary|concept, did, timestamp, text, author_did, ...}]`` newest first."""
    kinds = ids.texts("kinds", args["kinds"], 16)
    return await services.call("search", q=args["q"], kinds=kinds, limit=args["limit"])


_NOTE = {"did": Arg(str, required=True, max=ids.MAX_DID, doc="the note's container DID or short id")}

ROUTES: list[Endpoint] = [
    Endpoint("GET", "/api/notes", notes,
             {"limit": ids.LIMIT,
              "before": Arg(str, max=ids.MAX_DID, doc="the next page: the container_did of the last note shown"),
              "q": Arg(str, max=knowledge.MAX_QUERY, doc="only notes whose text or topic contains this"),
              "unread": Arg(bool, doc="true: only unread notes; false: only read ones"),
              "source": Arg(str, choices=SOURCES, doc="only notes with this signed source (user, cli: the person"
                                                      " or an A2A party; asked_kind tells which)"),
              "topic": Arg(str, max=256, doc="only notes with exactly this topic")},
             doc="a page of notes, newest first, each with who asked for it (asked_kind, asked_via, asked_label,"
                 " asked_id, approved_kind, approved_via); reading the list marks nothing read"),
    Endpoint("GET", "/api/notes/{did}", note_show, _NOTE, doc="one note in full; does not mark it read"),
    Endpoint("POST", "/api/notes", note_add,
             {"text": Arg(str, required=True, max=MAX_TEXT, doc="the note (#hashtags, @mentions are indexed)"),
              "topic": Arg(str, max=256, doc="a topic line"),
              "audience": Arg(str, choices=AUDIENCES, default="private",
                              doc="private: this node; friends: sent to friends; public: gossiped"),
              "priority": Arg(int, min=-100, max=100, default=0, doc="higher is more urgent"),
              "tags": _TAGS,
              "forward": Arg(int, min=0, max=2, default=0, doc="hops a friends note may travel past them")},
             doc="write a signed note as the person (provenance person/web; signed source user): {did}"),
    Endpoint("POST", "/api/notes/{did}/read", note_read, _NOTE,
             doc="mark a note read; returns it as it was (read says whether it had been)"),
    Endpoint("POST", "/api/notes/{did}/tags", note_tags,
             {**_NOTE, "add": _TAGS, "remove": Arg(list, max=64, doc="tags to remove")},
             doc="change the note's local tags (never forwarded); returns them"),
    Endpoint("POST", "/api/edits", edit,
             {"op": Arg(str, required=True, choices=_EDIT_OPS, doc="what to do"),
              "id": Arg(str, required=True, max=ids.MAX_DID, doc="any version of it (container DID or short id)"),
              "label": _TEXT, "description": Arg(str, max=64 * 1024), "aliases": Arg(list, max=256),
              "tags": _TAGS, "relation": Arg(str, max=64),
              "targets": Arg(list, max=256, doc="a link's target concepts (replace them)"),
              "inverse": Arg(str, max=64), "text": Arg(str, max=MAX_TEXT, doc="a note's new text"),
              "restore": Arg(bool, default=False, doc="note_delete: show a hidden note again"),
              "allow_dangling": _DANGLING},
             doc="a new version of a concept, link or note of yours, or withdraw one: {did, ...}"),
    Endpoint("GET", "/api/diary", _lister("diary"), {"limit": ids.LIMIT},
             doc="diary entries, the version each lineage shows, newest first"),
    Endpoint("GET", "/api/concepts", _lister("concepts"), {"limit": ids.LIMIT}, doc="concepts, newest first"),
    Endpoint("GET", "/api/links", _lister("links"), {"limit": ids.LIMIT}, doc="links between concepts, newest first"),
    Endpoint("POST", "/api/diary", diary_add,
             {"text": Arg(str, required=True, max=MAX_TEXT), "title": _TEXT,
              "topics": Arg(list, max=64, doc="topics (its tags)"), "previous": _PREVIOUS,
              "allow_dangling": _DANGLING, "forward": _FORWARD},
             doc="write a diary entry (or a new version of one): {did}"),
    Endpoint("POST", "/api/concepts", concept_add,
             {"label": Arg(str, required=True, max=256), "description": Arg(str, max=64 * 1024),
              "aliases": Arg(list, max=256, doc="other names"), "tags": _TAGS, "previous": _PREVIOUS,
              "allow_dangling": _DANGLING, "forward": _FORWARD},
             doc="define a concept (or a new version of one): {did}"),
    Endpoint("POST", "/api/links", link_add,
             {"source": Arg(str, required=True, max=ids.MAX_DID, doc="the concept (container DID or short id)"),
              "relation": Arg(str, required=True, max=64, doc="e.g. is-a, part-of, causes"),
              "targets": Arg(list, required=True, max=256, doc="the related concepts"),
              "domain": _TEXT, "inverse": Arg(str, max=64), "tags": _TAGS, "previous": _PREVIOUS,
              "allow_dangling": _DANGLING, "forward": _FORWARD},
             doc="relate a concept to others: {did}"),
    Endpoint("GET", "/api/search", search,
             {"q": Arg(str, required=True, max=knowledge.MAX_QUERY, doc="the words to find (a substring)"),
              "kinds": Arg(list, max=len(knowledge.SEARCH_KINDS), doc="any of notes, diary, concepts (default all)"),
              "limit": ids.LIMIT},
             doc="notes, diary entries and concepts containing q, newest first"),
]
