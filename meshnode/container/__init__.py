"""Signed HMP containers in deterministic CBOR.

Owns: the wire format, signing, container DIDs, the verification order, the
class schemas. Pure (no I/O, time passed in). Everything a peer, a file or an
LLM hands the node goes through :func:`decode_container` before anything
reasons about it. The format is specified in protocols/container.md.
"""

from meshnode.container.build import build_container
from meshnode.container.errors import CODES, ContainerError
from meshnode.container.model import DEFAULT_LIMITS, Container, Limits
from meshnode.container.timefmt import format_ms, now_ms, parse_ms
from meshnode.container.verify import decode_container

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
