"""Make and sign a new container (the writer's side of container.md).

Written for speed as well as clarity: every map is put into canonical key
order once, as it is assembled, so the plain (fast) encoder yields the
deterministic bytes; nothing is canonicalized twice.
"""

from __future__ import annotations

from typing import Any

from meshnode.container import cbor, schema
from meshnode.container.cbor import key_order
from meshnode.container.errors import ContainerError
from meshnode.container.model import (
    CONTAINER_VERSION,
    DEFAULT_LIMITS,
    Limits,
    SIG_ALGO,
    Container,
    container_did_for,
    payload_hash_for,
)
from meshnode.container.prescan import scan
from meshnode.container.timefmt import format_ms
from meshnode.container.checks import check_head_values, check_related, check_side
from meshnode.identity.keys import NodeKey

_ORDER_CACHE: dict[frozenset, tuple[str, ...]] = {}
_CALLER_FIELDS = frozenset({"class", "class_version", "payload_type", "tags", "ttl"})


def build_container(
    key: NodeKey,
    cls: str,
    payload: Any,
    *,
    timestamp_ms: int,
    class_version: str = "1.0",
    meta: dict | None = None,
    related: dict[str, list[str]] | None = None,
    payload_type: str = "cbor",
    tags: list[str] | None = None,
    ttl_ms: int | None = None,
    head_extra: dict[str, Any] | None = None,
    side: dict[str, Any] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> Container:
    """Sign ``payload`` as a container of class ``cls``.

    Everything the verifier checks on structure is checked first (head fields,
    related, class schema, size and depth limits): meshnode never signs what
    it would refuse from a peer. ``head_extra`` carries any other optional head
    field (recipient, confidence, network, ...). ``expired`` on the result is
    relative to ``timestamp_ms``; a verifier judges it against its own clock.
    """
    rules = schema.class_schema(cls, class_version)
    if rules is not None and payload_type == "cbor":
        rules.validate(payload, code="class_schema")
    depth = limits.max_depth
    side_c = cbor.canonicalize(side, depth, 0)[0] if side else {}  # side entries join the envelope
    check_side(side_c)
    # the payload, meta and related values sit inside the envelope and hmp_container
    payload_c, has_float = cbor.canonicalize(payload, depth, 2)
    meta_c = related_c = None
    if meta:
        meta_c, meta_float = cbor.canonicalize(meta, depth, 2)
        has_float = has_float or meta_float
    if related:
        if any(type(targets) is not list for targets in related.values()):
            raise ContainerError("bad_structure", "every related value must be a list of DIDs")
        related_c = cbor.canonicalize(related, depth, 2)[0]
        check_related(related_c)
    head: dict[str, Any] = {
        "version": CONTAINER_VERSION,
        "class": cls,
        "class_version": class_version,
        "class_id": f"{cls}_v{class_version}",
        "schema": f"meshnode:class/{cls}/{class_version}",
        "sender_did": key.did,
        "timestamp": format_ms(timestamp_ms),
        "sig_algo": SIG_ALGO,
        "payload_type": payload_type,
    }
    if tags:
        head["tags"] = list(tags)
    if ttl_ms is not None:
        head["ttl"] = format_ms(ttl_ms)
    for name, value in (head_extra or {}).items():
        if type(name) is not str:
            raise ContainerError("forbidden_type", f"head field name {name!r} is not text")
        if name in head or name in ("signature", "container_did", "payload_hash"):
            raise ContainerError("bad_structure", f"head.{name} is set by the builder")
        value, value_float = cbor.canonicalize(value, depth, 3)
        head[name] = value
        has_float = has_float or value_float
    # the fields that came from the caller get the verifier's checks; the rest are made right here
    schema.HEAD.validate_fields(head, _CALLER_FIELDS.union(head_extra or ()).intersection(head),
                                "bad_structure", "bad_field")
    check_head_values(head, payload_c)
    if "public_key" in head and head["public_key"] != key.public_key:
        raise ContainerError("bad_sender", "head.public_key is not the signing key")
    dump = cbor._dump
    payload_bytes = dump(payload_c, has_float)
    head["payload_hash"] = payload_hash_for(payload_bytes)
    tail = cbor.encode_tail(None if meta_c is None else dump(meta_c, has_float), payload_bytes,
                            None if related_c is None else dump(related_c, has_float))
    count = 2 + (meta_c is not None) + (related_c is not None)
    signed = cbor.encode_hmp(dump(_ordered(head), has_float), tail, count)
    if len(signed) > limits.max_bytes:  # before spending a signature on it
        raise ContainerError("too_large", f"{len(signed)} bytes, the limit is {limits.max_bytes}")
    did = container_did_for(signed)
    head_full = _ordered(dict(head, container_did=did, signature=key.sign(signed)))
    core = cbor.ENVELOPE_PREFIX + cbor.encode_hmp(dump(head_full, has_float), tail, count)
    hmp: dict[str, Any] = {"head": head_full}
    if meta_c is not None:
        hmp["meta"] = meta_c
    hmp["payload"] = payload_c
    if related_c is not None:
        hmp["related"] = related_c
    expired = ttl_ms is not None and ttl_ms <= timestamp_ms
    container = Container(did, hmp, side_c, timestamp_ms, expired, rules is not None, has_float, core)
    size = len(container.to_bytes()) if side_c else len(core)  # the limit counts side blocks too
    if size > limits.max_bytes:
        raise ContainerError("too_large", f"{size} bytes, the limit is {limits.max_bytes}")
    if size > limits.max_items:  # fewer bytes cannot hold more items (each takes one at least)
        scan(container.to_bytes() if side_c else core, limits.max_items, limits.max_depth)
    return container


def _ordered(d: dict[str, Any]) -> dict[str, Any]:
    """The same map with its keys in canonical order (the order is cached per key set)."""
    names = frozenset(d)
    order = _ORDER_CACHE.get(names)
    if order is None:
        order = tuple(sorted(names, key=key_order))
        if len(_ORDER_CACHE) < 1024:
            _ORDER_CACHE[names] = order
    return {k: d[k] for k in order}
