"""What every CLI command needs: its configuration, the database, the running node, safe output.

Light to import: a command that only asks the running node (``status``) loads neither the
store nor the knowledge code; the helpers that need them import them.
"""

from __future__ import annotations

import argparse
import json
import sys
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from meshnode.net import control
from meshnode.base.config.command_line import config_of
from meshnode.net.control import ControlError, socket_path
from meshnode.base.errors import MeshnodeError
from meshnode.store.home import open_identity

if TYPE_CHECKING:
    from meshnode.base.config import Config
    from meshnode.store.database import Database


def _config(args: argparse.Namespace) -> Config:
    """The configuration of the home a command names, which ``meshnode init`` must have made: no
    command but ``init`` (and the node's own ``run``) creates a home, and none reads a folder without
    a key as a node's (``web url`` once wrote a token into a home that did not exist). Every command
    module takes it from here."""
    config = config_of(args)
    if not config.key_path.is_file():
        where = "does not exist" if not config.home.exists() else f"has no key file ({config.key_path})"
        raise MeshnodeError("no_home", f"{config.home} {where}: it is not a node's home yet;"
                                       f" create one with `meshnode init --home {config.home}`")
    return config


def _open_db(config) -> Database:
    from meshnode.store.database import Database

    return Database(config.db_path, create=False)


NOT_RUNNING = 3  # exit code: the node is not running (LSB's "program is not running"), see `meshnode --help`


def _ask_node(config, cmd: str, args: dict | None = None, *, required: bool = True, timeout: float = 60.0):
    """Ask the running node over its control channel. With ``required=False``, None
    when no node runs (the caller then works on the database itself)."""
    try:
        return control.call(socket_path(config.db_path.parent), cmd, args, timeout=timeout)
    except ControlError as exc:
        if exc.code == "node_not_running" and not required:
            return None
        raise


def act(config, name: str, args: dict, on_home: Callable[[], dict] | None = None) -> Any:
    """The application-layer action ``name`` for the person at the CLI: by the running node, or,
    when none runs, on the home's database in this process (meshnode.app.on_home): the same
    function either way. There the App has the home's ``config``, and ``on_home()``: the other
    fields the action needs (built only when no node runs, e.g. the gate's jail)."""
    live = _ask_node(config, name, args, required=False)
    if live is not None:
        return live
    import functools

    import trio

    from meshnode.app.actor import person
    from meshnode.app.on_home import run_on_home

    fields = {"config": config, **(on_home() if on_home is not None else {})}
    return trio.run(functools.partial(run_on_home, config.db_path, lambda: open_identity(config), person("cli"),
                                      name, args, **fields))


def container_did(config, text: str, noun: str = "container") -> str:
    """A container DID from what a person typed: the DID, or a short id held here."""
    from meshnode.store import short_ids

    return _resolve(config, short_ids.resolve_container, text, noun)


def agent_did(config, text: str) -> str:
    """An agent DID from what a person typed: the DID, a known name, or a short id."""
    from meshnode.store import short_ids

    return _resolve(config, short_ids.resolve_agent, text)


def _resolve(config, resolve, text: str, *rest) -> str:
    from meshnode.store import short_ids

    if short_ids.is_whole(text):  # no database needed (nor a home)
        return resolve(None, text, *rest)
    db = _open_db(config)
    try:
        return resolve(db, text, *rest)
    finally:
        db.close()


def resolve_references(config, args: argparse.Namespace, references) -> None:
    """Turn the DIDs and short ids among ``args`` into whole container DIDs, in place, and
    refuse (unless --allow-dangling) one that this node does not hold or that is of another
    class (the ``references`` action): a version of nothing, or a link to nothing, is almost always
    a typo. ``references``: (attribute of ``args``, the argument as a person typed it, the class it
    must name); an attribute that is None (an option not given) is left as it is."""
    for attr, flag, cls in references:
        value = getattr(args, attr, None)
        if value is None:
            continue
        resolved = act(config, "references", {"texts": value if isinstance(value, list) else [value], "cls": cls,
                                              "what": flag, "allow_dangling": getattr(args, "allow_dangling", False),
                                              "option": "--allow-dangling"})
        setattr(args, attr, resolved if isinstance(value, list) else resolved[0])


_shown: dict[str, str] = {}  # DID -> what it is called here (store.names), once ``load_names`` read them
_full_dids = False  # --did: every agent printed by its whole DID


def show_dids(on: bool) -> None:
    """Before each command (``cli._run``): ``--did`` or not (``who`` then prints whole DIDs), and
    no names read yet (a command in a test's process never sees the previous one's)."""
    global _full_dids
    _full_dids = bool(on)
    _shown.clear()


def load_names(config) -> dict[str, str]:
    """What every agent known here is called (the ``names`` action: petname, announced name, or
    short id), kept for ``who`` for the rest of this command; DID -> name."""
    if not _shown:
        _shown.update({r["did"]: r["name"] for r in act(config, "names", {})})
    return _shown


def name_of(did: str | None, name: str | None = None) -> str:
    """What an agent is called here (``load_names``: the person's petname first), else ``name``
    (what the row says), else its short id."""
    from meshnode.store.short_ids import short_agent_id

    return (_shown.get(did) if did else None) or name or (short_agent_id(did) if did else "?")


def who(did: str | None, name: str | None = None) -> str:
    """An agent as a listing shows it: ``name_of``; its whole DID with ``--did``."""
    return did if did and _full_dids else name_of(did, name)


def agent_id(did: str) -> str:
    """An agent's id column: its short id; its whole DID with ``--did``."""
    from meshnode.store.short_ids import short_agent_id

    return did if _full_dids else short_agent_id(did)


def agent_line(did: str) -> str:
    """An agent alone on its line: what it is called here; with ``--did`` its DID, then that."""
    return f"{did}  {name_of(did)}" if _full_dids else name_of(did)


def named_text(text: str) -> str:
    """``text`` (a summary, a note) with every agent DID in it as ``who`` shows it."""
    from meshnode.store.short_ids import AGENT_DID

    return AGENT_DID.sub(lambda m: who(m.group(0)), str(text or ""))


def agents_named(config, dids) -> list[dict]:
    """``[{did, name}]`` for ``dids`` (what ``--json`` prints of a list of agents: whole DIDs and names)."""
    dids = [d for d in dids if isinstance(d, str)]
    if not dids:
        return []
    return [{"did": r["did"], "name": r["name"]} for r in act(config, "names", {"dids": dids})]


def terminal_safe(text: str, keep_newlines: bool = False) -> str:
    """Escape control and format characters (escape sequences, bidi overrides) before
    text from peers reaches a terminal; everything else, any script, prints as is."""
    out = []
    for ch in text:
        if ch == "\n" and keep_newlines:
            out.append(ch)
        elif unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn") and ch != "\u200d":
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
        else:
            out.append(ch)
    return "".join(out)


def read_limited_file(path: Path, limit: int) -> bytes:
    """A file's bytes, refused with a readable reason when unreadable or larger than ``limit``."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise MeshnodeError("unreadable_file", f"{path}: {exc.strerror}") from None
    if len(data) > limit:
        raise MeshnodeError("file_too_large", f"{path} is larger than {limit} bytes")
    return data


def print_json(value: Any) -> None:
    """Machine-readable output: indented JSON (what ``--json`` prints)."""
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def print_fields(args: argparse.Namespace, record: dict) -> None:
    """One record: with ``--json`` as JSON; otherwise a ``key: value`` line per field (lists
    joined, tables as ``key=value``, empty as ``(none)``)."""
    if getattr(args, "json", False):
        print_json(record)
        return
    width = max((len(k) for k in record), default=0) + 2
    for key, value in record.items():
        if isinstance(value, list):
            shown = ", ".join(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in value)
        elif isinstance(value, dict):
            shown = ", ".join(f"{k}={v}" for k, v in value.items())
        elif isinstance(value, bool) or value is None:
            shown = {True: "yes", False: "no", None: "-"}[value]
        else:
            shown = value
        print(terminal_safe(f"{key + ':':{width}}{shown if shown != '' else '(none)'}"))


def print_rows(args: argparse.Namespace, rows: list, line: Callable[[Any], str]) -> None:
    """The one output contract of a listing: with ``--json`` the rows as JSON (``[]`` when
    there are none); otherwise ``line(row)`` for each, made terminal-safe (it may hold
    newlines), and ``(none)`` when there are none and a person is looking (a terminal):
    a pipe gets no lines at all."""
    if getattr(args, "json", False):
        print_json(rows)
    elif not rows:
        if sys.stdout.isatty():
            print("(none)")
    else:
        for row in rows:
            print(terminal_safe(line(row), keep_newlines=True))


def _only(group: BaseExceptionGroup, kind: type) -> BaseException | None:
    """The first leaf of ``group`` if every leaf is a ``kind``, else None."""
    leaves, stack = [], [group]
    while stack:
        exc = stack.pop()
        if isinstance(exc, BaseExceptionGroup):
            stack.extend(exc.exceptions)
        else:
            leaves.append(exc)
    return leaves[0] if leaves and all(isinstance(e, kind) for e in leaves) else None
