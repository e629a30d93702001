"""What a spawn is asked, what it answers, its settings and a child's default name (its typed error:
meshnode.base.errors.SpawnError)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from meshnode.base.config import SPAWN_AUTOSTARTS, Config
from meshnode.base.errors import SpawnError


KINDS = ("clone", "trained", "newborn")
AUTOSTARTS = SPAWN_AUTOSTARTS
MAX_NAME = 64
# a child's name: ASCII letters, digits, '.', '_' and '-', a letter or digit first; so it is one word
# on a command line and could never be read as a path (no '/', no leading '.', no '..')
CHILD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,%d}" % (MAX_NAME - 1))


@dataclass(frozen=True)
class SpawnSettings:
    """The ``[spawn]`` section (reasons for the defaults: README, Spawn)."""

    autostart: str = "none"
    wait_seconds: float = 30.0
    invitation_hours: float = 24.0
    max_children: int = 16
    max_depth: int = 3

    @classmethod
    def from_config(cls, config: Config) -> "SpawnSettings":
        s = config.values["spawn"]
        return cls(autostart=s["autostart"], wait_seconds=float(s["wait_seconds"]),
                   invitation_hours=float(s["invitation_hours"]), max_children=int(s["max_children"]),
                   max_depth=int(s["max_depth"]))


@dataclass(frozen=True)
class SpawnRequest:
    kind: str
    name: str | None = None
    home: Path | None = None
    start: bool = False
    autostart: str | None = None        # None: [spawn] autostart
    bundle: Path | None = None          # write a bundle for another host instead of a local child
    expires_hours: float | None = None  # bundle invitation; None: [spawn] invitation_hours
    wait_seconds: float | None = None   # None: [spawn] wait_seconds
    by: str = "cli"                     # who asked: cli, web, agent
    friends: str | None = None          # --friends (spawn.friends): None, the parent only

    def to_ask(self) -> dict:
        """The arguments of the node's action ``spawn`` (paths as text; ``from_ask`` reads them, with
        ``by``, which the action says from who asks: never the caller's to choose)."""
        return {"kind": self.kind, "name": self.name, "home": str(self.home) if self.home else None,
                "start": self.start, "autostart": self.autostart, "bundle": str(self.bundle) if self.bundle else None,
                "expires_hours": self.expires_hours, "friends": self.friends}

    @classmethod
    def from_ask(cls, ask: dict) -> "SpawnRequest":
        return cls(kind=ask["kind"], name=ask["name"], home=Path(ask["home"]) if ask["home"] else None,
                   start=bool(ask["start"]), autostart=ask["autostart"],
                   bundle=Path(ask["bundle"]) if ask["bundle"] else None,
                   expires_hours=None if ask["expires_hours"] is None else float(ask["expires_hours"]),
                   by=str(ask["by"]), friends=ask.get("friends"))


@dataclass
class SpawnResult:
    did: str | None
    name: str
    kind: str
    depth: int
    home: str | None = None
    listen: list[str] = field(default_factory=list)
    web_listen: str | None = None
    bootstrap: list[str] = field(default_factory=list)
    seed: dict = field(default_factory=dict)
    autostart: dict = field(default_factory=dict)
    started: bool = False
    reachable_seconds: float | None = None
    bundle: str | None = None
    invitation: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def check_child_name(name) -> str:
    """``name`` when it is a valid child name (``CHILD_NAME``); SpawnError ``bad_name`` otherwise."""
    if not isinstance(name, str) or not CHILD_NAME.fullmatch(name) or ".." in name:
        shown = repr(name[:40]) if isinstance(name, str) else type(name).__name__
        raise SpawnError("bad_name", f"a child's name is 1 to {MAX_NAME} letters, digits, '.', '_' or '-', starting"
                         f" with a letter or digit (no '..'), not {shown}")
    return name


def default_name(parent_name: str, kind: str, taken: set[str]) -> str:
    """``<parent name>-<kind>-<n>``, the smallest n no child of this parent has (64 characters at most),
    the parent's name cut to the characters a child's name allows (``check_child_name``)."""
    base = re.sub(r"\.{2,}", ".", re.sub(r"[^A-Za-z0-9._-]+", "-", parent_name)).lstrip("._-") or "node"
    n = 1
    while True:
        suffix = f"-{kind}-{n}"
        name = base[:MAX_NAME - len(suffix)] + suffix
        if name not in taken:
            return name
        n += 1
