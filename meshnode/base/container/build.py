"""Make and sign a new container (the writer's side of container.md).

Written for speed as well as clarity: every map is put into canonical key
order once, as it is assembled, so the plain (fast) encoder yields the
deterministic bytes; nothing is canonicalized twice.
"""

from __future__ import annotations

from typing import Any

import cbor2

from meshnode.base.container import cbor, schema
from meshnode.base.container.cbor import key_order
from meshnode.base.container.checks import check_head_values, check_related, check_side
from meshnode.base.container.errors import ContainerError
from meshnode.base.container.head_template import CALLER_FIELDS, head_template
from meshnode.base.container.model import (
    CONTAINER_VERSION,
    DEFAULT_LIMITS,
    Limits,
    SIG_ALGO,
    Container,
    container_did_for,
    payload_hash_for,
)
from meshnode.base.container.prescan import scan
from meshnode.base.container.timefmt import format_ms
from meshnode.base.identity.keys import NodeKey

_ORDER_CACHE: dict[frozenset, tuple[str, ...]] = {}
_CALLER_FIELDS = CALLER_FIELDS | {"tags", "ttl"}


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
    side_c = {}
    if side:  # side entries join the envelope
        side_c = cbor.canonicalize(side, depth, 0)[0]
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
    timestamp = format_ms(timestamp_ms)
    if tags or ttl_ms is not None or head_extra:
        template = None
        head, head_float = _head(key, cls, class_version, payload_type, timestamp, tags, ttl_ms, head_extra, depth,
                                 payload_c)
        has_float = has_float or head_float
    else:  # the usual head: its fixed fields were checked and encoded with the first container like it
        template = head_template(key.did, cls, class_version, payload_type)
        if type(payload_c) is not template.payload_type:
            check_head_values(dict(template.fixed), payload_c)  # raises, naming the fault
    dump = cbor2.dumps if not has_float else cbor.canonical_dumps
    try:
        payload_bytes = dump(payload_c)
        tail = cbor.encode_tail(None if meta_c is None else dump(meta_c), payload_bytes,
                                None if related_c is None else dump(related_c))
    except UnicodeEncodeError:  # a lone surrogate in some text
        raise ContainerError("forbidden_type", "text that is not valid Unicode (a lone surrogate)") from None
    payload_hash = payload_hash_for(payload_bytes)
    count = 2 + (meta_c is not None) + (related_c is not None)
    if template is not None:
        signed_head, middle = template.encode(timestamp, payload_hash)
        signed = cbor.encode_hmp(signed_head, tail, count)
    else:
        head["payload_hash"] = payload_hash
        signed = cbor.encode_hmp(cbor._dump(_ordered(head), has_float), tail, count)
    if len(signed) > limits.max_bytes:  # before spending a signature on it
        raise ContainerError("too_large", f"{len(signed)} bytes, the limit is {limits.max_bytes}")
    did = container_did_for(signed)
    signature = key.sign(signed)
    if template is not None:
        head_full = template.full_head(timestamp, payload_hash, signature, did)
        head_bytes = template.full_bytes(signature, did, middle)
    else:
        head_full = _ordered(dict(head, container_did=did, signature=signature))
        head_bytes = dump(head_full)
    core = cbor.ENVELOPE_PREFIX + cbor.encode_hmp(head_bytes, tail, count)
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


def _head(key: NodeKey, cls: str, class_version: str, payload_type: str, timestamp: str, tags: list[str] | None,
          ttl_ms: int | None, head_extra: dict[str, Any] | None, depth: int, payload: Any,
          ) -> tuple[dict[str, Any], bool]:
    """A head with optional fields (without payload_hash and the two derived fields), checked as the
    verifier will check it; and whether it holds a float."""
    head: dict[str, Any] = {
        "version": CONTAINER_VERSION,
        "class": cls,
        "class_version": class_version,
        "class_id": f"{cls}_v{class_version}",
        "schema": f"meshnode:class/{cls}/{class_version}",
        "sender_did": key.did,
        "timestamp": timestamp,
        "sig_algo": SIG_ALGO,
        "payload_type": payload_type,
    }
    has_float = False
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
    check_head_values(head, payload)
    if "public_key" in head and head["public_key"] != key.public_key:
        raise ContainerError("bad_sender", "head.public_key is not the signing key")
    return head, has_float


def _ordered(d: dict[str, Any]) -> dict[str, Any]:
    """The same map with its keys in canonical order (the order is cached per key set)."""
    names = frozenset(d)
    order = _ORDER_CACHE.get(names)
    if order is None:
        order = tuple(sorted(names, key=key_order))
        if len(_ORDER_CACHE) < 1024:
            _ORDER_CACHE[names] = order
    return {k: d[k] for k in order}
