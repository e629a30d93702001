"""Make and sign a new container (the writer's side of container.md)."""

from __future__ import annotations

from typing import Any

from meshnode.container import cbor, schema
from meshnode.container.cbor import key_order
from meshnode.container.errors import ContainerError
from meshnode.container.model import (
    CONTAINER_VERSION,
    SIG_ALGO,
    Container,
    container_did_for,
    payload_hash_for,
)
from meshnode.container.timefmt import format_ms
from meshnode.identity.keys import NodeKey


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
) -> Container:
    """Sign ``payload`` as a container of class ``cls``.

    A payload of a known class is checked against its schema first: meshnode
    never signs what it would refuse from a peer. ``head_extra`` carries any
    other optional head field (recipient, confidence, network, ...).
    """
    rules = schema.class_schema(cls, class_version)
    if rules is not None:
        rules.validate(payload, code="class_schema")
    payload_c, payload_float = cbor.canonicalize(payload)
    head: dict[str, Any] = {
        "version": CONTAINER_VERSION,
        "class": cls,
        "class_version": class_version,
        "class_id": f"{cls}_v{class_version}",
        "schema": f"meshnode:class/{cls}/{class_version}",
        "sender_did": key.did,
        "timestamp": format_ms(timestamp_ms),
        "payload_hash": payload_hash_for(cbor._dump(payload_c, payload_float)),
        "sig_algo": SIG_ALGO,
        "payload_type": payload_type,
    }
    if tags:
        head["tags"] = list(tags)
    if ttl_ms is not None:
        head["ttl"] = format_ms(ttl_ms)
    for name, value in (head_extra or {}).items():
        if name in head or name in ("signature", "container_did"):
            raise ContainerError("bad_structure", f"head.{name} is set by the builder")
        head[name] = value
    hmp: dict[str, Any] = {"head": head, "payload": payload_c}
    if meta:
        hmp["meta"] = meta
    if related:
        hmp["related"] = {name: list(targets) for name, targets in related.items()}
    hmp_c, has_float = cbor.canonicalize(hmp)
    signed = cbor._dump(hmp_c, has_float)
    did = container_did_for(signed)
    head_c = dict(hmp_c["head"], container_did=did, signature=key.sign(signed))
    hmp_c["head"] = {k: head_c[k] for k in sorted(head_c, key=key_order)}
    expired = ttl_ms is not None and ttl_ms <= timestamp_ms
    side_c = cbor.canonicalize(side)[0] if side else {}
    return Container(did, hmp_c, side_c, timestamp_ms, expired, rules is not None, has_float)
