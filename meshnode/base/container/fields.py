"""Value checks for payload and head fields, and the :class:`Schema` table they make.

A check takes a decoded CBOR value and returns None when it is fine, else a message; a schema
is data (field name -> (check, required)), so protocols/classes.md can list the same rules and
the cognitive core can show them as JSON Schema (``described``). The class registry that uses
these is :mod:`meshnode.base.container.schema`; GMP's tables are in :mod:`meshnode.base.container.gmp_classes`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from meshnode.base.container.errors import ContainerError
from meshnode.base.container.timefmt import parse_ms

MAX_DID_TEXT = 128
MAX_SHORT_TEXT = 256


# --- value checks: each returns None when the value is fine, else a message.
# A plain str message means "wrong type" (bad_structure in the head); a
# WrongValue message means "right type, invalid value" (bad_field).


class WrongValue(str):
    """A check's message for a value of the right type that is not allowed."""


def described(check: Callable[[Any], str | None], json_schema: dict) -> Callable[[Any], str | None]:
    """Attach the JSON Schema a check enforces (``check.json``), so the rule can be shown as well as
    applied: the cognitive core's command catalogue and tool definitions are made from it."""
    check.json = json_schema  # type: ignore[attr-defined]
    return check


def text(max_len: int = MAX_SHORT_TEXT) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        if type(v) is not str:
            return "must be text"
        if len(v) > max_len:
            return WrongValue(f"is longer than {max_len} characters")
        return None

    check.simple = (str, max_len)  # type: ignore[attr-defined]  # lets Schema.validate skip the call
    return described(check, {"type": "string", "maxLength": max_len})


def one_of(*choices: str) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        if type(v) is not str:
            return f"must be one of {', '.join(choices)}"
        return None if v in choices else WrongValue(f"must be one of {', '.join(choices)}")

    return described(check, {"type": "string", "enum": list(choices)})


DID_TEXT = re.compile(r"did:[a-z0-9]+:[A-Za-z0-9._:%-]+")  # W3C DID syntax, without path/query


def did(v: Any) -> str | None:
    if type(v) is not str:
        return "must be a DID (text)"
    if len(v) > MAX_DID_TEXT or not DID_TEXT.fullmatch(v):
        return WrongValue("must be a DID (did:<method>:<id>, at most 128 characters)")
    return None


described(did, {"type": "string", "format": "did", "maxLength": MAX_DID_TEXT,
                "pattern": "^" + DID_TEXT.pattern + "$"})


def list_of(item: Callable[[Any], str | None], max_items: int = 256, non_empty: bool = False):
    def check(v: Any) -> str | None:
        if type(v) is not list:
            return "must be an array"
        if len(v) > max_items:
            return WrongValue(f"has more than {max_items} items")
        if non_empty and not v:
            return WrongValue("must not be empty")
        for i, x in enumerate(v):
            err = item(x)
            if err:
                return type(err)(f"item {i} {err}")
        return None

    return described(check, {"type": "array", "items": getattr(item, "json", {}), "maxItems": max_items,
                             **({"minItems": 1} if non_empty else {})})


def boolean(v: Any) -> str | None:
    return None if type(v) is bool else "must be true or false"


described(boolean, {"type": "boolean"})


def integer(lo: int = -(2**63), hi: int = 2**63 - 1):
    def check(v: Any) -> str | None:
        if type(v) is not int:
            return f"must be an integer in [{lo}, {hi}]"
        return None if lo <= v <= hi else WrongValue(f"must be an integer in [{lo}, {hi}]")

    bounds = {**({"minimum": lo} if lo > -(2**63) else {}), **({"maximum": hi} if hi < 2**63 - 1 else {})}
    return described(check, {"type": "integer", **bounds})


def number(lo: float, hi: float):
    def check(v: Any) -> str | None:
        if type(v) not in (int, float):
            return f"must be a number in [{lo}, {hi}]"
        return None if lo <= v <= hi else WrongValue(f"must be a number in [{lo}, {hi}]")  # NaN fails

    return described(check, {"type": "number", "minimum": lo, "maximum": hi})


def byte_string(size: int | None = None, max_len: int = 64 * 1024):
    def check(v: Any) -> str | None:
        if type(v) is not bytes:
            return "must be a byte string"
        if size is not None and len(v) != size:
            return WrongValue(f"must be exactly {size} bytes")
        if len(v) > max_len:
            return WrongValue(f"is longer than {max_len} bytes")
        return None

    if size is None:
        check.simple = (bytes, max_len)  # type: ignore[attr-defined]
    return check


def mapping(v: Any) -> str | None:
    return None if type(v) is dict else "must be a map"


def anything(v: Any) -> str | None:
    return None


described(mapping, {"type": "object"})
described(anything, {})


@dataclass(frozen=True)
class Schema:
    """``fields``: name -> (check, required). ``whole``, when set, checks the payload as a whole
    after every field passed (cross-field rules such as "required when ..."); same message
    convention as a field check."""

    name: str
    fields: dict[str, tuple[Callable[[Any], str | None], bool]] = field(default_factory=dict)
    whole: Callable[[dict], str | None] | None = None

    def __post_init__(self) -> None:
        required = frozenset(n for n, (_, req) in self.fields.items() if req)
        object.__setattr__(self, "_required", required)
        simple = {n: check.simple for n, (check, _) in self.fields.items() if hasattr(check, "simple")}
        object.__setattr__(self, "_simple", simple)

    def validate_fields(self, value: dict, names, code: str, value_code: str) -> None:
        """Check only the named fields of ``value`` (those a builder took from its caller)."""
        for name in names:
            rule = self.fields.get(name)
            if rule is not None:
                err = rule[0](value[name])
                if err:
                    raise ContainerError(value_code if isinstance(err, WrongValue) else code,
                                         f"{self.name}.{name} {err}")

    def validate(self, value: Any, code: str = "bad_structure", value_code: str | None = None) -> None:
        """Raise ContainerError(``code``) for a missing field or a wrong type, and
        ContainerError(``value_code``, default ``code``) for a wrong value."""
        if type(value) is not dict:
            raise ContainerError(code, f"{self.name} must be a map")
        if not self._required <= value.keys():
            missing = sorted(self._required - value.keys())[0]
            raise ContainerError(code, f"{self.name}.{missing} is required")
        fields, simple = self.fields, self._simple
        for name, v in value.items():
            fast = simple.get(name)
            if fast is not None and type(v) is fast[0] and len(v) <= fast[1]:
                continue
            rule = fields.get(name)
            if rule is not None:
                err = rule[0](v)
                if err:
                    raise ContainerError(value_code or code if isinstance(err, WrongValue) else code,
                                         f"{self.name}.{name} {err}")
        if self.whole is not None:
            err = self.whole(value)
            if err:
                raise ContainerError(value_code or code if isinstance(err, WrongValue) else code,
                                     f"{self.name} {err}")


def time_text(v: Any) -> str | None:
    """A payload field holding container time text, checked in full."""
    if type(v) is not str:
        return "must be container time text (YYYY-MM-DDTHH:MM:SS.mmmZ)"
    try:
        parse_ms(v)
    except ContainerError as exc:
        return WrongValue(exc.reason)
    return None


def hex_text(digits: int) -> Callable[[Any], str | None]:
    """Text of exactly ``digits`` lowercase hex digits (a random id, a SHA-256)."""
    pattern = re.compile(f"[0-9a-f]{{{digits}}}")

    def check(v: Any) -> str | None:
        if type(v) is not str:
            return f"must be text of {digits} hex digits"
        return None if pattern.fullmatch(v) else WrongValue(f"must be {digits} lowercase hex digits")

    return described(check, {"type": "string", "pattern": f"^[0-9a-f]{{{digits}}}$"})


def payload_schema(cls: str, fields: dict[str, tuple[Callable[[Any], str | None], bool]],
                   whole: Callable[[dict], str | None] | None = None) -> Schema:
    """The payload schema of class ``cls`` (its messages say ``<cls>.payload.<field> ...``)."""
    return Schema(f"{cls}.payload", fields, whole)
