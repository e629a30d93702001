"""CogSync knowledge as signed containers: diary entries, concepts and links (protocols/cogsync.md).

Pure: a key, values and the time in; a signed container out, or a KnowledgeError saying which
field is wrong. An update is a new version naming the old one (``replaces`` ->
related.previous_version). Reading and finding them in the store is meshnode.records.knowledge.
"""

from __future__ import annotations

from meshnode.base.container import Container, build_container
from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.keys import NodeKey


class KnowledgeError(MeshnodeError):
    """Knowledge that cannot be written or found as asked."""


def _words(value: str | None, what: str, max_len: int = 256) -> None:
    """A person's (or the agent's) text field, checked in words before the container schema
    sees it (whose reasons name field paths: ``payload.edges ... relation``)."""
    if value is not None and (not value.strip() or len(value) > max_len):
        raise KnowledgeError("bad_field", f"{what} is 1 to {max_len} characters, not blank")


def _word_list(values: list[str] | None, what: str, max_len: int = 64, max_items: int = 64) -> None:
    """``what``: the plural ("tags")."""
    if values and len(values) > max_items:
        raise KnowledgeError("bad_field", f"at most {max_items} {what}, not {len(values)}")
    for value in values or []:
        _words(value, f"each of the {what}", max_len)


def _related(replaces: list[str] | None) -> dict | None:
    return {"previous_version": sorted(set(replaces))} if replaces else None


def _head(tags: list[str] | None) -> dict | None:
    return {"tags": sorted(set(tags))} if tags else None


MAX_FORWARD = 1  # a holder can tell only whether its copy came straight from the author


def _forward(payload: dict, forward: int | None) -> dict:
    """Set the hop limit (protocols/cogsync.md 1.2): None leaves knowledge free to travel
    friend to friend; 0 keeps it with the author's friends; 1 lets them pass it one hop on."""
    if forward is not None:
        if type(forward) is not int or not 0 <= forward <= MAX_FORWARD:
            raise KnowledgeError("bad_forward",
                                 f"forward is 0 or {MAX_FORWARD} hops past your friends (or none: no limit)")
        payload["forward"] = forward
    return payload


def make_diary_entry(key: NodeKey, text: str, *, now_ms: int, title: str | None = None,
                     topics: list[str] | None = None, replaces: list[str] | None = None,
                     forward: int | None = None) -> Container:
    if not text.strip():
        raise KnowledgeError("empty_entry", "a diary entry needs some text")
    _words(title, "the title")
    _word_list(topics, "topics")
    payload: dict = _forward({"content": text, "topics": sorted(set(topics or []))}, forward)
    if title:
        payload["title"] = title
    return build_container(key, "diary_entry", payload, timestamp_ms=now_ms, related=_related(replaces))


def make_concept(key: NodeKey, label: str, *, now_ms: int, description: str | None = None,
                 aliases: list[str] | None = None, tags: list[str] | None = None,
                 replaces: list[str] | None = None, forward: int | None = None) -> Container:
    if not label.strip():
        raise KnowledgeError("empty_concept", "a concept needs a label")
    _words(label, "the label")
    _words(description, "the description", 64 * 1024)
    _word_list(aliases, "aliases", 256, 256)
    _word_list(tags, "tags")
    payload: dict = _forward({"label": label}, forward)
    if description:
        payload["description"] = description
    if aliases:
        payload["aliases"] = sorted(set(aliases))
    return build_container(key, "semantic_node", payload, timestamp_ms=now_ms, head_extra=_head(tags),
                           related=_related(replaces))


def make_link(key: NodeKey, source: str, relation: str, targets: list[str], *, now_ms: int,
              domain: str | None = None, inverse: str | None = None, tags: list[str] | None = None,
              replaces: list[str] | None = None, forward: int | None = None) -> Container:
    """One relation from a concept to one or more concepts (by container DID), as HMP's
    semantic_edges; several sources and relations fit one container too."""
    _words(relation, "the relation", 64)
    _words(inverse, "the inverse relation", 64)
    _words(domain, "the domain")
    _word_list(tags, "tags")
    if not targets or len(targets) > 256:
        raise KnowledgeError("bad_field", "a link has 1 to 256 targets")
    edge: dict = {"targets": sorted(set(targets)), "relation": relation}
    if inverse:
        edge["inverse_relation"] = inverse
    payload: dict = _forward({"edges": {source: [edge]}}, forward)
    if domain:
        payload["domain"] = domain
    return build_container(key, "semantic_edges", payload, timestamp_ms=now_ms, head_extra=_head(tags),
                           related=_related(replaces))
