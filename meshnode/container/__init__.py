"""Signed HMP containers in deterministic CBOR.

Owns: the wire format, signing, container DIDs, the verification order, the
class schemas. Pure (no I/O, time passed in). Everything a peer, a file or an
LLM hands the node goes through :func:`decode_container` before anything
reasons about it. The format is specified in protocols/container.md.
"""

from meshnode.lazy import exports

__getattr__ = exports(__name__, {
    "build_container": "meshnode.container.build",
    "CODES": "meshnode.container.errors",
    "ContainerError": "meshnode.container.errors",
    "DEFAULT_LIMITS": "meshnode.container.model",
    "Container": "meshnode.container.model",
    "Limits": "meshnode.container.model",
    "format_ms": "meshnode.container.timefmt",
    "now_ms": "meshnode.container.timefmt",
    "parse_ms": "meshnode.container.timefmt",
    "decode_container": "meshnode.container.verify",
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
