"""The loaded configuration (``Config``): the checked values, and the paths they name resolved against
the home; and where the home is."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from meshnode.base.container.model import Limits

HOME_ENV = "MESHNODE_HOME"
CONFIG_FILE = "config.toml"


DEFAULT_ORIGIN = "default"


@dataclass(frozen=True)
class Config:
    home: Path
    values: Mapping[str, Mapping[str, Any]]
    # (section, key) -> where its value came from: the config file's path, "$MESHNODE_..." or "flags"
    # (a setting missing here has its default: ``origin``)
    origins: Mapping[tuple[str, str], str] = field(default_factory=dict, compare=False, repr=False)

    def origin(self, section: str, key: str) -> str:
        return self.origins.get((section, key), DEFAULT_ORIGIN)

    def get(self, section: str, key: str) -> Any:
        return self.values[section][key]

    def path(self, section: str, key: str = "path") -> Path:
        p = Path(os.path.expanduser(self.get(section, key)))
        return p if p.is_absolute() else self.home / p

    @property
    def key_path(self) -> Path:
        return self.path("keys")

    @property
    def db_path(self) -> Path:
        return self.path("store")

    @property
    def name(self) -> str:
        return self.get("node", "name")

    @property
    def limits(self) -> Limits:
        from meshnode.base.container.model import Limits  # (the container model loads cbor2: not every command needs it)

        return Limits(
            max_bytes=self.get("limits", "max_container_bytes"),
            max_depth=self.get("limits", "max_depth"),
            max_items=self.get("limits", "max_items"),
            clock_skew_ms=int(self.get("limits", "clock_skew_seconds") * 1000),
        )


def resolve_home(flag: str | None, environ: Mapping[str, str] = os.environ) -> Path:
    """--home, else $MESHNODE_HOME, else ~/.meshnode."""
    raw = flag or environ.get(HOME_ENV) or "~/.meshnode"
    return Path(os.path.expanduser(raw)).absolute()
