"""CogSync knowledge: diary entries, concepts and links, written for someone and read back; a
search over them and the notes; the references a person typed, resolved and checked.

``add_*`` are the whole writes (a container signed and stored with the record of who asked),
for callers already in the store's writer (the agent's store-side commands); the actions wrap
them. What is written here reaches peers by CogSync at their next sync.
"""

from __future__ import annotations

from meshnode.domain import knowledge as cogsync
from meshnode.records import knowledge
from meshnode.app.actor import Actor
from meshnode.app.context import App
from meshnode.base.container import Container
from meshnode.base.errors import MeshnodeError

KINDS = ("diary", "concepts", "links")


def _texts(items: list | None) -> list[str]:
    return [str(x) for x in (items or [])]


def keep(db, actor: Actor, c: Container, now_ms: int) -> Container:
    """Store ``c`` (signed here for ``actor``) with the record of who asked."""
    db.put_container(c, received_at_ms=now_ms, local={"asked_by": actor.row()})
    return c


def add_diary_entry(db, key, actor: Actor, text: str, *, now_ms: int, title: str | None = None,
                    topics: list | None = None, previous: list | None = None, forward: int | None = None) -> Container:
    return keep(db, actor, cogsync.make_diary_entry(key, text, now_ms=now_ms, title=title, topics=_texts(topics),
                                                      replaces=_texts(previous), forward=forward), now_ms)


def add_concept(db, key, actor: Actor, label: str, *, now_ms: int, description: str | None = None,
                aliases: list | None = None, tags: list | None = None, previous: list | None = None,
                forward: int | None = None) -> Container:
    return keep(db, actor, cogsync.make_concept(key, label, now_ms=now_ms, description=description,
                                                  aliases=_texts(aliases), tags=_texts(tags),
                                                  replaces=_texts(previous), forward=forward), now_ms)


def add_link(db, key, actor: Actor, source: str, relation: str, targets: list, *, now_ms: int,
             domain: str | None = None, inverse: str | None = None, tags: list | None = None,
             previous: list | None = None, forward: int | None = None) -> Container:
    return keep(db, actor, cogsync.make_link(key, source, relation, _texts(targets), now_ms=now_ms, domain=domain,
                                               inverse=inverse, tags=_texts(tags), replaces=_texts(previous),
                                               forward=forward), now_ms)


async def diary_add(app: App, actor: Actor, text: str, title: str | None = None, topics: list | None = None,
                    previous: list | None = None, forward: int | None = None) -> dict:
    t = app.clock()
    c = await app.store.write(lambda db: add_diary_entry(db, app.key, actor, text, now_ms=t, title=title,
                                                         topics=topics, previous=previous, forward=forward))
    return {"did": c.did}


async def concept_add(app: App, actor: Actor, label: str, description: str | None = None, aliases: list | None = None,
                      tags: list | None = None, previous: list | None = None, forward: int | None = None) -> dict:
    t = app.clock()
    c = await app.store.write(lambda db: add_concept(db, app.key, actor, label, now_ms=t, description=description,
                                                     aliases=aliases, tags=tags, previous=previous, forward=forward))
    return {"did": c.did}


async def link_add(app: App, actor: Actor, source: str, relation: str, targets: list, domain: str | None = None,
                   inverse: str | None = None, tags: list | None = None, previous: list | None = None,
                   forward: int | None = None) -> dict:
    t = app.clock()
    c = await app.store.write(lambda db: add_link(db, app.key, actor, source, relation, targets, now_ms=t,
                                                  domain=domain, inverse=inverse, tags=tags, previous=previous,
                                                  forward=forward))
    return {"did": c.did}


def _listing(kind: str):
    async def read(app: App, actor: Actor, limit: int = 50) -> list[dict]:
        return await app.store.read(knowledge.listing, kind, int(limit))
    read.__name__ = kind
    read.__doc__ = f"The newest {kind}, newest first."
    return read


diary, concepts, links = (_listing(kind) for kind in KINDS)


async def search(app: App, actor: Actor, q: str, kinds: list | None = None, limit: int = 50) -> list[dict]:
    """Notes, diary entries and concepts containing ``q``, newest first: ``[{kind, did, timestamp,
    text, author_did, ...}]``."""
    return await app.store.read(knowledge.search, q, kinds, limit)


async def references(app: App, actor: Actor, texts: list, cls: str, what: str, allow_dangling: bool = False,
                     option: str = "allow_dangling") -> list[str]:
    """The whole container DIDs the ``texts`` (DIDs or short ids) name as ``cls`` references, each
    refused (unless ``allow_dangling``) when not held here or of another class; ``what`` and
    ``option``: the argument and the way to allow a dangling one, as the face names them."""
    if cls not in knowledge.CLASS_NOUNS or not isinstance(texts, list):
        raise MeshnodeError("bad_request", f"references: texts is a list, cls one of {', '.join(knowledge.CLASS_NOUNS)}")

    def resolve(db) -> list[str]:
        return [knowledge.resolve_reference(db, str(text), cls, what=what, allow_dangling=bool(allow_dangling),
                                            option=option) for text in texts]
    return await app.store.read(resolve)
