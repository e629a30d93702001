"""Notes: the node's notebook (HMP ``notes``; seed 000's user chat), as signed containers.

A note is a ``note`` container whose payload holds what travels (text, topic,
mentions and hashtags parsed at creation, source, priority, audience). Local
fields (the person's own tags, read marks, hidden) live only in the ``notes``
row and are never signed or forwarded. Pure: no I/O, time passed in.
"""

from __future__ import annotations

import re

from meshnode.base.container import Container, build_container
from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.keys import NodeKey

SOURCES = ("user", "cli", "llm", "llm:task", "system")
AUDIENCES = ("private", "friends", "public")
MAX_TEXT = 64 * 1024  # a note's text, in UTF-8 bytes (so in characters too): its container stays far under
# [limits] max_container_bytes (256 KiB) and a frame of the exchange; a public one over one gossip message
# (net.mesh_gossip.MAX_GOSSIP_BYTES, 60 KiB) is pushed directly to the connected peers (net.mesh_publish)
MAX_FORWARD = 2
_MENTION = re.compile(r"(?<![\w@])@(did:[a-z0-9]+:[A-Za-z0-9._:%-]+|[\w.-]{1,64})")
_HASHTAG = re.compile(r"(?<![\w#])#(\w[\w-]{0,63})")


def own_local(*tags: str) -> dict:
    """The local fields a note this node's agent or the node itself writes starts with: read, since
    it is not the agent's mail (context 6 and idle's on_note are for what others and the person write)."""
    return {"tags": list(tags), "read": True}


class NoteError(MeshnodeError):
    """A note that cannot be written as asked."""


def parse_mentions(text: str) -> list[str]:
    """@name and @did:... mentions; ones too long to be a DID or a name are not mentions."""
    return _unique(m for m in (m.group(1).rstrip(".") for m in _MENTION.finditer(text)) if len(m) <= 128)


def parse_hashtags(text: str) -> list[str]:
    return _unique(m.group(1).lower() for m in _HASHTAG.finditer(text))


def make_note(key: NodeKey, text: str, *, now_ms: int, topic: str | None = None, source: str = "cli",
              audience: str = "private", priority: int = 0, code: str | None = None,
              recipients: list[str] | None = None, forward: int = 0,
              replaces: list[str] | None = None, reply_to: str | None = None) -> Container:
    """A signed note. A ``friends`` note names its recipients (the author's friends now)
    in ``head.recipient``: whoever holds it forwards it to them and to no one else, unless
    ``forward`` (1 or 2) lets it travel that many hops further, friend to friend. ``replaces``
    names the author's notes this one is a new version of (readers hide those); ``reply_to`` the
    note this one answers (``related.in_reply_to``: a conversation's threads, meshnode/store/chat.py)."""
    if not text.strip():
        raise NoteError("empty_note", "a note needs some text")
    if len(text) > MAX_TEXT or len(text.encode("utf-8", "surrogatepass")) > MAX_TEXT:
        raise NoteError("note_too_long", f"a note is at most {MAX_TEXT} bytes of UTF-8 text (64 KiB); this one is"
                                         f" {len(text.encode('utf-8', 'surrogatepass'))}: split it in parts")
    if source not in SOURCES:
        raise NoteError("bad_note", f"source must be one of {', '.join(SOURCES)}")
    if audience not in AUDIENCES:
        raise NoteError("bad_note", f"audience must be one of {', '.join(AUDIENCES)}")
    if not -100 <= priority <= 100:
        raise NoteError("bad_note", "priority must be between -100 and 100")
    payload: dict = {"text": text, "source": source, "audience": audience, "priority": priority}
    if topic:
        payload["topic"] = topic
    if code:
        payload["code"] = code
    mentions, hashtags = parse_mentions(text), parse_hashtags(text)
    if mentions:
        payload["mentions"] = mentions[:64]
    if hashtags:
        payload["hashtags"] = hashtags[:64]
    if forward and audience != "friends":
        raise NoteError("bad_note", "only a friends note can be forwarded further")
    if not 0 <= forward <= MAX_FORWARD:
        raise NoteError("bad_note", f"forward is 0 to {MAX_FORWARD} hops")
    if forward:
        payload["forward"] = forward
    head_extra = None
    if audience == "friends":
        if not recipients:
            raise NoteError("no_friends", "a friends note needs friends: add one with `meshnode friend add DID`")
        head_extra = {"recipient": sorted(set(recipients))}
    related = {}
    if replaces:
        related["previous_version"] = sorted(set(replaces))
    if reply_to:
        related["in_reply_to"] = [reply_to]
    return build_container(key, "note", payload, timestamp_ms=now_ms, meta={"created_by": "AGENT"},
                           head_extra=head_extra, related=related or None)


def _unique(items) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return list(seen)
