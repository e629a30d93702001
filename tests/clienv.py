"""The environment of a CLI subprocess in tests (a module of its own: `from conftest import`
breaks when another conftest.py, such as tests/web's, was imported first)."""

from __future__ import annotations

import os
from pathlib import Path


def cli_env(fake_user_home: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a CLI subprocess: os.environ without MESHNODE_*, plus ``env``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("MESHNODE_")}
    base["HOME"] = str(fake_user_home)
    base["MESHNODE_NET_LISTEN"] = "/ip4/127.0.0.1/tcp/0"  # tests never take a fixed port
    base["MESHNODE_WEB_LISTEN"] = "127.0.0.1:0"  # nor the web notebook's 8470
    base["MESHNODE_NET_BOOTSTRAP"] = "bootstrap.txt"
    base["PYTHONIOENCODING"] = "utf-8"
    base.pop("PYTHONWARNINGS", None)
    if env:
        base.update(env)
    return base
