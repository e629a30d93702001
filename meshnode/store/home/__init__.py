"""A node's home directory: create it (``init``) and open it (every other command)."""

from __future__ import annotations

import getpass
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from meshnode.base.config import CONFIG_FILE, Config, check_name, default_config_text, load_config
from meshnode.base.errors import ConfigError, KeyFileError
from meshnode.base.identity.keyfile import PASSPHRASE_ENV, key_file_is_encrypted, load_key_file, write_key_file
from meshnode.base.identity.keys import NodeKey

BOOTSTRAP_TEMPLATE = (
    "# Bootstrap peers: one libp2p multiaddr with /p2p/<peer id> per line.\n"
    "# Lines starting with # are comments. Example:\n"
    "# /ip4/192.0.2.10/tcp/7822/p2p/12D3KooW...\n"
)


@dataclass
class InitResult:
    key: NodeKey
    created_key: bool
    created_config: bool


def init_home(home: Path, *, name: str | None, passphrase: str | None, exist_ok: bool,
              overrides: dict | None = None) -> tuple[Config, InitResult]:
    """Create the home layout, config, key file and database. Idempotent with ``exist_ok``."""
    try:
        return _init_home(home, name, passphrase, exist_ok, overrides)
    except (OSError, ValueError) as exc:  # e.g. the home is a file, or a path holds a NUL byte
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError("bad_home", f"cannot set up {home}: {reason}") from None


def _init_home(home: Path, name: str | None, passphrase: str | None, exist_ok: bool,
               overrides: dict | None) -> tuple[Config, InitResult]:
    name = name if name is not None else (home.name or "meshnode")
    check_name(name)  # before anything is written, so a bad name leaves nothing behind
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    config_file = home / CONFIG_FILE
    created_config = False
    if not config_file.exists():
        config_file.write_text(default_config_text(name), encoding="utf-8")
        created_config = True
    config = load_config(home, overrides)
    bootstrap = home / "bootstrap.txt"
    if not bootstrap.exists():
        bootstrap.write_text(BOOTSTRAP_TEMPLATE, encoding="utf-8")
    key_path = config.key_path
    if key_path.exists():
        if not exist_ok:
            raise KeyFileError("key_exists", f"{home} is already initialised (key file {key_path} exists)")
        key = load_key_file(key_path, _passphrase_for(key_path, passphrase))
        created_key = False
    else:
        key = NodeKey.generate()
        write_key_file(key_path, key, passphrase)
        created_key = True
    from meshnode.store.database import Database  # (a command that only reads the key does not load the store)

    db = Database(config.db_path)
    try:
        with db.transaction() as conn:
            conn.execute(
                "INSERT INTO identity (id, name, pubkey, created_at, updated_at)"
                " VALUES (?, ?, ?, datetime('now'), datetime('now'))"
                " ON CONFLICT (id) DO UPDATE SET name = excluded.name, updated_at = excluded.updated_at",
                (key.did, config.name, key.public_key.hex()),
            )
    finally:
        db.close()
    return config, InitResult(key, created_key, created_config)


def open_identity(config: Config, passphrase: str | None = None) -> NodeKey:
    return load_key_file(config.key_path, _passphrase_for(config.key_path, passphrase))


def _passphrase_for(key_path: Path, given: str | None) -> str | None:
    if given:
        return given
    if not key_path.exists() or not key_file_is_encrypted(key_path):
        return None
    if os.environ.get(PASSPHRASE_ENV):
        return os.environ[PASSPHRASE_ENV]
    if sys.stdin.isatty():
        return getpass.getpass(f"passphrase for {key_path}: ")
    return None  # load_key_file explains what to do
