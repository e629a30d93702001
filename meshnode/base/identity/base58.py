"""Base58btc (the Bitcoin alphabet), as used by did:key multibase and libp2p peer ids.

Small and dependency-free on purpose: identity parsing sits at the edge of the
node, so it must be strict (no silent acceptance of foreign characters) and
must not change behaviour with a third-party upgrade.
"""

from __future__ import annotations

ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_INDEX = {ch: i for i, ch in enumerate(ALPHABET)}


_CHUNK = 58**10  # ten digits per big-integer division
_PAIRS = [a + b for a in ALPHABET for b in ALPHABET]  # two digits per small division


def b58encode(data: bytes) -> str:
    zeros = len(data) - len(data.lstrip(b"\0"))
    num = int.from_bytes(data, "big")
    chunks = []
    while num:
        num, chunk = divmod(num, _CHUNK)
        chunks.append(chunk)
    out = []
    for chunk in chunks:  # least significant first; each chunk is exactly ten digits
        for _ in range(5):
            chunk, pair = divmod(chunk, 3364)
            out.append(_PAIRS[pair])
    digits = "".join(reversed(out)).lstrip("1")
    return "1" * zeros + digits


def b58decode(text: str) -> bytes:
    """Decode base58btc; raises ValueError on any character outside the alphabet."""
    num = 0
    for ch in text:
        try:
            num = num * 58 + _INDEX[ch]
        except KeyError:
            raise ValueError(f"invalid base58 character {ch!r}") from None
    zeros = len(text) - len(text.lstrip("1"))
    body = num.to_bytes((num.bit_length() + 7) // 8, "big") if num else b""
    return b"\0" * zeros + body
