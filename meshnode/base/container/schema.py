"""Field rules for the container head and the registry of payload classes.

A schema here is a small table: field name -> (type check, required). It is
data, so protocols/classes.md can list the same rules and a reader can scan
them. Unknown fields are allowed everywhere (HMP: ignore but keep when
forwarding); known fields must have the right type and value. The checks
themselves are in :mod:`meshnode.base.container.fields` (imported here too, so
callers building their own tables take them from either); the GMP 1.1 tables
are in :mod:`meshnode.base.container.gmp_classes`, which this registry includes.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from meshnode.base.container import gmp_classes
from meshnode.base.container.fields import (  # noqa: F401  (the checks are this module's API too)
    MAX_DID_TEXT,
    MAX_SHORT_TEXT,
    Schema,
    WrongValue,
    anything,
    boolean,
    byte_string,
    described,
    did,
    hex_text,
    integer,
    list_of,
    mapping,
    number,
    one_of,
    payload_schema,
    text,
    time_text,
)

CLASS_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
CLASS_VERSION = re.compile(r"[0-9]{1,3}\.[0-9]{1,3}")
PAYLOAD_HASH = re.compile(r"sha256:[0-9a-f]{64}")


def _timestamp_text(v: Any) -> str | None:
    """Shape only: the verifier parses head times itself (and says bad_field when they are wrong)."""
    return None if type(v) is str and len(v) <= 40 else "must be container time text (YYYY-MM-DDTHH:MM:SS.mmmZ)"


HEAD = Schema(
    "head",
    {
        # required (HMP v5 section 3.3)
        "version": (text(16), True),
        "class": (text(64), True),
        "class_version": (text(16), True),
        "class_id": (text(96), True),
        "container_did": (text(MAX_DID_TEXT), True),
        "schema": (text(MAX_SHORT_TEXT), True),
        "sender_did": (text(MAX_DID_TEXT), True),
        "timestamp": (_timestamp_text, True),
        "payload_hash": (text(80), True),
        "sig_algo": (text(32), True),
        "signature": (byte_string(64), True),
        "payload_type": (text(64), True),
        # optional (HMP v5 section 3.4)
        "recipient": (list_of(did, non_empty=True), False),
        "key_recipient": (byte_string(), False),
        "group_recipient": (list_of(mapping, non_empty=True), False),
        "broadcast": (boolean, False),
        "tags": (list_of(text(64), max_items=64), False),
        "confidence": (number(0, 1), False),
        "ttl": (_timestamp_text, False),
        "public_key": (byte_string(32), False),
        "compression": (one_of("zstd", "gzip"), False),
        "magnet_uri": (text(2048), False),
        "network": (text(64), False),
        "subclass": (text(64), False),
        "encryption_algo": (text(64), False),
        "key_container": (did, False),
    },
)


# --- payload classes -------------------------------------------------------

# GMP 1.1 (protocols/gmp.md section 2) is a table of its own module; the 1.0 classes are registered below
_REGISTRY: dict[tuple[str, str], Schema] = dict(gmp_classes.SCHEMAS)


def register(cls: str, version: str, fields: dict[str, tuple[Callable[[Any], str | None], bool]],
             whole: Callable[[dict], str | None] | None = None) -> Schema:
    schema = payload_schema(cls, fields, whole)
    _REGISTRY[(cls, version)] = schema
    return schema


def class_schema(cls: str, version: str) -> Schema | None:
    """The payload schema for a known (class, class_version), or None if unknown."""
    return _REGISTRY.get((cls, version))


def known_classes() -> list[tuple[str, str]]:
    return sorted(_REGISTRY)


def hooked_classes() -> dict[tuple[str, str], str]:
    """(class, class_version) whose admission and views the store runs through hooks a domain package
    registers (``meshnode.store.hooks``), each with the installer that registers them."""
    return dict.fromkeys(gmp_classes.SCHEMAS, gmp_classes.STORE_HOOKS)


_LONG = 64 * 1024
_tags = list_of(text(64), max_items=64)
_dids = list_of(did, max_items=1024)
_knowledge_forward = integer(0, 1)  # CogSync knowledge: hops past the author's friends (absent: no limit)

# meshnode's notebook entry (HMP agent `notes` table; seed 000's distributed chat)
register(
    "note",
    "1.0",
    {
        "text": (text(_LONG), True),
        "topic": (text(), False),
        "code": (text(_LONG), False),
        "mentions": (list_of(text(MAX_DID_TEXT), max_items=64), False),
        "hashtags": (_tags, False),
        "source": (one_of("user", "cli", "llm", "llm:task", "system"), True),
        "priority": (integer(-100, 100), False),
        "audience": (one_of("private", "friends", "public"), True),
        "user_did": (text(MAX_DID_TEXT), False),
        "forward": (integer(0, 2), False),  # hops a friends note may travel past its recipients
    },
)
register(
    "peer_announce",
    "1.0",
    {
        "name": (text(), True),
        "interests": (_tags, False),
        "expertise": (_tags, False),
        "roles": (list_of(one_of("relay", "mailman", "pubsub-hub", "archive", "egp-voter")), False),
        "addresses": (list_of(mapping, max_items=32), True),
        "mailman": (_dids, False),
        "key_is_falsified": (boolean, False),
    },
)
register("heartbeat", "1.0", {"seq": (integer(0), True), "status": (text(32), False)})
register(
    "diary_entry",
    "1.0",
    {
        "title": (text(), False),
        "topics": (_tags, False),
        "summary": (text(4096), False),
        "content": (text(_LONG), True),
        "forward": (_knowledge_forward, False),
    },
)
register(
    "semantic_node",
    "1.0",
    {
        "label": (text(), True),
        "description": (text(_LONG), False),
        "aliases": (list_of(text()), False),
        "fields": (mapping, False),
        "forward": (_knowledge_forward, False),
    },
)


def _edge(v: Any) -> str | None:
    if type(v) is not dict:
        return "must be a map"
    for name, check, required in (("targets", list_of(did, max_items=256, non_empty=True), True),
                                  ("relation", text(64), True), ("inverse_relation", text(64), False),
                                  ("bidirectional", boolean, False), ("context", text(4096), False)):
        if name not in v:
            if required:
                return f"needs {name}"
            continue
        err = check(v[name])
        if err:
            return type(err)(f"{name} {err}")
    return None


def _edges(v: Any) -> str | None:
    """HMP v5: source concept DID -> [{targets, relation, inverse_relation?, bidirectional?, context?}]."""
    if type(v) is not dict:
        return "must be a map"
    if not v or len(v) > 1024:
        return WrongValue("must name 1 to 1024 source concepts")
    for source, edges in v.items():
        err = did(source) or list_of(_edge, max_items=256, non_empty=True)(edges)
        if err:
            return type(err)(f"entry {str(source)[:40]!r} {err}")
    return None


register("semantic_edges", "1.0", {"domain": (text(), False), "edges": (_edges, True),
                                   "forward": (_knowledge_forward, False)})
register(
    "goal",
    "1.0",
    {
        "title": (text(), True),
        "description": (text(_LONG), False),
        "priority": (number(0, 1), False),
        "expected_outcome": (text(4096), False),
        "ethical_context": (text(4096), False),
        "creator": (did, False),
    },
)
register(
    "task",
    "1.0",
    {
        "title": (text(), True),
        "status": (one_of("pending", "in_progress", "completed", "failed", "abandoned"), True),
        "progress": (number(0, 1), False),
        "assigned_to": (_dids, False),
        "metrics": (mapping, False),
        "deadline": (time_text, False),
        "notes": (text(_LONG), False),
    },
)
# HMP v5 CogConsensus (protocols/cogconsensus.md). `decision` is meshnode's: which threshold
# the vote is cast under (absent: general); HMP's own fields keep their HMP meaning.
register(
    "vote",
    "1.0",
    {
        "target_did": (did, True),
        "vote_value": (integer(-1, 1), True),
        "vote_type": (text(64), True),  # HMP: approval, objection, support, abstain, ...
        "arguments": (list_of(mapping, max_items=64), False),  # HMP: [{reason, evidence[]}]
        "decision": (one_of("general", "ethical"), False),
    },
)


def _record(name: str, fields: dict[str, tuple[Callable[[Any], str | None], bool]]):
    """A check for a map with named fields (unknown ones allowed), like a nested Schema."""
    def check(v: Any) -> str | None:
        if type(v) is not dict:
            return f"must be a {name} map"
        for field_name, (rule, required) in fields.items():
            if field_name not in v:
                if required:
                    return f"needs {field_name}"
                continue
            err = rule(v[field_name])
            if err:
                return type(err)(f"{field_name} {err}")
        return None

    return check


_SHARE = number(0, 1e9)
register(
    "consensus_result",
    "1.0",
    {
        "target_did": (did, True),
        "decision": (one_of("general", "ethical"), True),
        "computed_at": (time_text, True),
        "rule": (_record("rule", {"half_life_ms": (integer(0, 2**53), True),
                                  "min_voters": (integer(1, 1_000_000), True),
                                  "min_trust": (number(0, 1e9), True)}), True),
        "votes": (list_of(_record("vote", {"vote": (did, True), "voter": (did, True),
                                           "value": (number(-1, 1), True), "trust": (number(0, 1), True),
                                           "decay": (number(0, 1), True)}), max_items=512), True),
        "weights": (_record("weights", {"approve": (_SHARE, True), "reject": (_SHARE, True),
                                        "neutral": (_SHARE, True)}), True),
        "score": (number(-1, 1), True),
        "state": (one_of("approved", "rejected", "disputed", "pending"), True),
        "summary_percent": (_record("summary_percent", {"approved": (number(0, 100), True),
                                                        "rejected": (number(0, 100), True),
                                                        "neutral": (number(0, 100), True)}), True),
    },
)


def _evidence_counts(v: Any) -> str | None:
    """kind -> number of observations (meshnode's evidence kinds; protocols/reputation.md)."""
    if type(v) is not dict:
        return "must be a map"
    if len(v) > 64:
        return WrongValue("has more than 64 kinds")
    for kind, n in v.items():
        err = text(64)(kind) or integer(0)(n)
        if err:
            return type(err)(f"entry {str(kind)[:40]!r} {err}")
    return None


# HMP v5 RTE: one agent's view of one peer. The per-criterion objects
# (relay_reliability, content_integrity, ...) stay allowed and unchecked.
register(
    "trust",
    "1.0",
    {
        "agent_did": (did, True),
        "total_trust_score": (number(0, 1), True),
        "basis": (one_of("direct", "transitive"), False),  # absent: direct
        "computed_at": (time_text, False),
        "capped_until": (time_text, False),  # held under the equivocation cap until then
        "evidence_counts": (_evidence_counts, False),
        "evidence": (list_of(did, max_items=256), False),  # DIDs of evidence objects (e.g. equivocation proofs)
    },
)
# MeshConsensus: two conflicting signed votes (or proposals) of one validator for one
# (kind, height, round); consensus.messages.check_equivocation verifies it.
register(
    "equivocation_evidence",
    "1.0",
    {"validator": (did, True), "first": (byte_string(max_len=65536), True),
     "second": (byte_string(max_len=65536), True)},
)
register(
    "workflow_entry",
    "1.0",
    {"entry_type": (text(64), True), "summary": (text(4096), False), "details": (anything, False)},
)


# Spawning a child on another host (protocols/spawn.md section 8): point to point, never gossiped
# or shared by sync (store.sharing.PRIVATE_CLASSES); the hello is never stored at all. The kinds
# are meshnode.engines.spawn.model.KINDS (a test keeps the two equal; the container layer imports nothing
# above it).
INVITATION_CLASS, HELLO_CLASS = "spawn_invitation", "spawn_hello"  # (the network tells them apart by name)
_addresses = list_of(text(1024), max_items=16)
register(
    INVITATION_CLASS,
    "1.0",
    {
        "id": (hex_text(32), True),
        "parent": (did, True),  # must equal head.sender_did: checked by spawn.invitation
        "kind": (one_of("clone", "trained", "newborn"), True),
        "name": (text(64), True),
        "depth": (integer(1, 16), True),
        "expires": (time_text, True),
        "bundle_hash": (hex_text(64), True),
        "addresses": (_addresses, True),
        "config_hash": (hex_text(64), False),  # SHA-256 of the bundle's config.template.toml
    },
)
register(
    HELLO_CLASS,
    "1.0",
    {
        "invitation": (byte_string(max_len=16 * 1024), True),  # the spawn_invitation container's bytes
        "child": (did, True),  # must equal head.sender_did: checked by spawn.invitation
        "addresses": (_addresses, True),
        "host": (text(255), False),
    },
)
