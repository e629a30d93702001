"""What a spawn is asked, what it answers, its settings and a child's default name (its typed error:
meshnode.base.errors.SpawnError)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from meshnode.base.config import SPAWN_AUTOSTARTS, Config


KINDS = ("clone", "trained", "newborn")
AUTOSTARTS = SPAWN_AUTOSTARTS


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

    def to_ask(self) -> dict:
        """The arguments of the node's action ``spawn`` (paths as text; ``from_ask`` reads them, with
        ``by``, which the action says from who asks: never the caller's to choose)."""
        return {"kind": self.kind, "name": self.name, "home": str(self.home) if self.home else None,
                "start": self.start, "autostart": self.autostart, "bundle": str(self.bundle) if self.bundle else None,
                "expires_hours": self.expires_hours}

    @classmethod
    def from_ask(cls, ask: dict) -> "SpawnRequest":
        return cls(kind=ask["kind"], name=ask["name"], home=Path(ask["home"]) if ask["home"] else None,
                   start=bool(ask["start"]), autostart=ask["autostart"],
                   bundle=Path(ask["bundle"]) if ask["bundle"] else None,
                   expires_hours=None if ask["expires_hours"] is None else float(ask["expires_hours"]),
                   by=str(ask["by"]))


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


def default_name(parent_name: str, kind: str, taken: set[str]) -> str:
    """``<parent name>-<kind>-<n>``, the smallest n no child of this parent has (64 characters at most)."""
    n = 1
    while True:
        suffix = f"-{kind}-{n}"
        name = parent_name[:64 - len(suffix)] + suffix
        if name not in taken:
            return name
        n += 1
