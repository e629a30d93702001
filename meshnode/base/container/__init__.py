"""Signed HMP containers in deterministic CBOR.

Owns: the wire format, signing, container DIDs, the verification order, the
class schemas. Pure (no I/O, time passed in). Everything a peer, a file or an
LLM hands the node goes through :func:`decode_container` before anything
reasons about it. The format is specified in protocols/container.md.
"""

from meshnode.base.lazy import exports

__getattr__ = exports(__name__, {
    "build_container": "meshnode.base.container.build",
    "CODES": "meshnode.base.container.errors",
    "ContainerError": "meshnode.base.container.errors",
    "DEFAULT_LIMITS": "meshnode.base.container.model",
    "Container": "meshnode.base.container.model",
    "Limits": "meshnode.base.container.model",
    "format_ms": "meshnode.base.container.timefmt",
    "now_ms": "meshnode.base.container.timefmt",
    "parse_ms": "meshnode.base.container.timefmt",
    "decode_container": "meshnode.base.container.verify",
})

__all__ = [
    "CODES",
    "DEFAULT_LIMITS",
    "Container",
    "ContainerError",
    "Limits",
    "build_container",
    "decode_container",
    "format_ms",
    "now_ms",
    "parse_ms",
]
