"""The route record every api_*.py module declares, and the argument check done before a handler runs.

One declaration per route gives three things: the checked arguments (a typed 400 before any service
is called), the route table of ``GET /api`` and the API documentation written from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from meshnode.base.errors import MeshnodeError

_TYPES = (str, int, float, bool, list, dict)
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")
INT_MIN, INT_MAX = -(2 ** 63), 2 ** 63 - 1  # what SQLite stores: a larger int is OverflowError deep inside


@dataclass(frozen=True)
class Arg:
    """One argument: its type, whether it must be given, and its bounds."""

    type: type
    required: bool = False
    max: int | float | None = None  # str: max length; int/float: max value; list: max items
    min: int | float | None = None  # int/float: min value
    choices: tuple | None = None
    default: Any = None
    doc: str = ""

    def describe(self) -> dict:
        """The argument as the route table shows it (JSON)."""
        out: dict[str, Any] = {"type": self.type.__name__, "required": self.required}
        for name in ("min", "max", "default", "doc"):
            value = getattr(self, name)
            if value not in (None, ""):
                out[name] = value
        if self.choices is not None:
            out["choices"] = list(self.choices)
        return out


@dataclass(frozen=True)
class Endpoint:
    """A route: ``handler(services, args)`` returns a JSON-able result (``raw``: a Response,
    called as ``handler(services, args, request)``)."""

    method: str
    path: str
    handler: Callable
    args: dict[str, Arg] = field(default_factory=dict)
    doc: str = ""
    auth: bool = True
    raw: bool = False

    def __post_init__(self):
        if self.method not in ("GET", "POST"):
            raise ValueError(f"{self.path}: method {self.method!r} is neither GET nor POST")
        for name, arg in self.args.items():
            if arg.type not in _TYPES:
                raise ValueError(f"{self.path}: argument {name} has unsupported type {arg.type!r}")

    def describe(self) -> dict:
        return {"method": self.method, "path": self.path, "doc": self.doc, "auth": self.auth,
                "args": {name: arg.describe() for name, arg in self.args.items()}}


def _bad(reason: str) -> MeshnodeError:
    return MeshnodeError("bad_arguments", reason)


def _from_text(name: str, arg: Arg, raw: Any) -> Any:
    """A query-string value converted to the argument's type."""
    if not isinstance(raw, str):
        return raw
    if arg.type is str:
        return raw
    if arg.type is bool:
        if raw.lower() in _TRUE:
            return True
        if raw.lower() in _FALSE:
            return False
        raise _bad(f"{name} must be true or false, not {raw[:40]!r}")
    if arg.type in (int, float):
        try:
            return arg.type(raw)
        except ValueError:
            raise _bad(f"{name} must be {'an integer' if arg.type is int else 'a number'},"
                       f" not {raw[:40]!r}") from None
    if arg.type is list:
        return [item for item in raw.split(",") if item] if raw else []
    raise _bad(f"{name} cannot be given in the query string (send it as JSON)")


def _check_type(name: str, arg: Arg, value: Any) -> None:
    kind = arg.type
    if kind is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, kind)
    if not ok:
        raise _bad(f"{name} must be of type {kind.__name__}, not {type(value).__name__}")


def _check_bounds(name: str, arg: Arg, value: Any) -> None:
    if arg.choices is not None and value not in arg.choices:
        raise _bad(f"{name} must be one of {', '.join(map(str, arg.choices))}")
    if arg.type in (int, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise _bad(f"{name} must be a finite number")
        if arg.type is int and not INT_MIN <= value <= INT_MAX:
            raise _bad(f"{name} must fit in 64 bits ({INT_MIN} to {INT_MAX})")
        if arg.min is not None and value < arg.min:
            raise _bad(f"{name} must be at least {arg.min}")
        if arg.max is not None and value > arg.max:
            raise _bad(f"{name} must be at most {arg.max}")
    elif arg.max is not None and arg.type in (str, list, dict) and len(value) > arg.max:
        unit = "characters" if arg.type is str else "items"
        raise _bad(f"{name} has {len(value)} {unit}; at most {arg.max}")


def parse_args(spec: dict[str, Arg], given: dict, *, from_query: bool) -> dict:
    """The declared arguments, checked and typed; MeshnodeError("bad_arguments") for an unknown key,
    a missing required one, a wrong type or a value out of range. Missing optional -> its default."""
    if not isinstance(given, dict):
        raise _bad("the arguments must be a JSON object")
    unknown = sorted(str(k) for k in given if k not in spec)
    if unknown:
        raise _bad(f"unknown argument{'s' if len(unknown) > 1 else ''} {', '.join(u[:40] for u in unknown[:5])};"
                   f" this route takes {', '.join(spec) or 'none'}")
    out: dict[str, Any] = {}
    for name, arg in spec.items():
        if name not in given or given[name] is None:
            if arg.required:
                raise _bad(f"{name} is required")
            out[name] = arg.default
            continue
        value = _from_text(name, arg, given[name]) if from_query else given[name]
        _check_type(name, arg, value)
        _check_bounds(name, arg, value)
        out[name] = value
    return out
