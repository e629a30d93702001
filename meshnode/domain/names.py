"""What a petname may be: the name a person gives an agent on this node (store/names.py keeps them).

A petname is typed back wherever a command takes an agent, so it must never be read as something
else: not a DID (``did:...``), not the short id a listing shows (``key:...``), not the start of an
agent's key (``z6Mk...``). It is 1 to ``MAX_PETNAME`` characters, printable (no control, format or
line-break characters), without leading or trailing spaces. Uniqueness (whatever the case) is the
store's to keep.
"""

from __future__ import annotations

import re
import unicodedata

from meshnode.base.errors import MeshnodeError

MAX_PETNAME = 32
_ID_LIKE = re.compile(r"(?i:did|key):|z6Mk[1-9A-HJ-NP-Za-km-z]*$")


class PetnameError(MeshnodeError):
    """A petname refused (``bad_petname``), with what to do instead."""


def looks_like_id(text: str) -> bool:
    """Read as a DID or a short id by the resolver (store/short_ids.py), not as a name."""
    return bool(_ID_LIKE.match(text.strip()))


def check_petname(text: object) -> str:
    """``text`` as a petname, or a ``PetnameError`` saying why not."""
    if not isinstance(text, str) or not text.strip():
        raise PetnameError("bad_petname", "a petname is 1 to 32 characters of text")
    if len(text) > MAX_PETNAME:
        raise PetnameError("bad_petname", f"a petname is at most {MAX_PETNAME} characters ({len(text)} given)")
    if text != text.strip():
        raise PetnameError("bad_petname", "a petname neither starts nor ends with a space")
    bad = next((ch for ch in text if ch != " " and (unicodedata.category(ch)[0] in "CZ")), None)
    if bad is not None:
        raise PetnameError("bad_petname", f"a petname holds no control, format or line-break character"
                                          f" (U+{ord(bad):04X} given)")
    if looks_like_id(text):
        raise PetnameError("bad_petname", f"{text!r} looks like a DID or a short id (did:..., key:..., z6Mk...);"
                                          " a petname must not")
    return text
