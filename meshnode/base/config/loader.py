"""Reading the configuration: the defaults, then config.toml, then MESHNODE_* variables, then flags.

Each value is type-checked against its default as it is read, and a list's items against the section's
item checks, so an error names where the value came from (the file, the variable or "flags") and the
setting; the sections' ranges are checked once everything is merged (schema.check).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Mapping

from meshnode.base.config.model import CONFIG_FILE, Config
from meshnode.base.config.schema import DEFAULTS, ITEM_CHECKS, check
from meshnode.base.errors import ConfigError

MAX_CONFIG_BYTES = 256 * 1024


def load_config(home: Path, overrides: Mapping[str, Mapping[str, Any]] | None = None,
                environ: Mapping[str, str] = os.environ) -> Config:
    values = {section: dict(keys) for section, keys in DEFAULTS.items()}
    file = home / CONFIG_FILE
    if file.exists():
        _merge(values, _read_toml(file), str(file))
    for section, keys in _from_environ(environ).items():
        for key, value in keys.items():
            _merge(values, {section: {key: value}}, f"${_env_name(section, key)}")
    if overrides:
        _merge(values, {s: {k: v for k, v in kv.items() if v is not None} for s, kv in overrides.items()}, "flags")
    check(values, home)
    return Config(home=home, values=values)


def _read_toml(file: Path) -> dict:
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise ConfigError("unreadable_config", f"{file}: {exc.strerror}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError("bad_config", f"{file} is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError("bad_config", f"{file}: {exc}") from None


def _from_environ(environ: Mapping[str, str]) -> dict:
    found: dict[str, dict[str, Any]] = {}
    for section, keys in DEFAULTS.items():
        for key, default in keys.items():
            name = _env_name(section, key)
            if name in environ:
                found.setdefault(section, {})[key] = _parse_env(name, environ[name], default)
    return found


def _env_name(section: str, key: str) -> str:
    return f"MESHNODE_{section}_{key}".upper()


def _parse_env(name: str, raw: str, default: Any) -> Any:
    if isinstance(default, bool):
        if raw.lower() in ("1", "true", "yes", "on"):
            return True
        if raw.lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError("bad_config", f"{name}={raw!r} is not a boolean")
    if isinstance(default, (int, float)):
        try:
            return type(default)(raw)
        except ValueError:
            raise ConfigError("bad_config", f"{name}={raw!r} is not a number") from None
    if isinstance(default, dict):  # a TOML inline table: MESHNODE_REACTOR_MENTORS='{self = "did:key:..."}'
        try:
            return tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError("bad_config", f"{name}={raw!r} is not a TOML inline table ({exc})") from None
    if isinstance(default, list):  # a TOML array, or items separated by commas
        if raw.lstrip().startswith("["):
            try:
                return tomllib.loads(f"v = {raw}")["v"]
            except tomllib.TOMLDecodeError as exc:
                raise ConfigError("bad_config", f"{name}={raw!r} is not a TOML array ({exc})") from None
        return [item.strip() for item in raw.split(",") if item.strip()]
    return raw


def _merge(values: dict, new: Mapping, origin: str) -> None:
    for section, keys in new.items():
        if section not in DEFAULTS:
            raise ConfigError("bad_config", f"{origin}: unknown section [{section}]")
        if not isinstance(keys, Mapping):
            raise ConfigError("bad_config", f"{origin}: [{section}] must be a table")
        for key, value in keys.items():
            if key not in DEFAULTS[section]:
                raise ConfigError("bad_config", f"{origin}: unknown setting {section}.{key}")
            default = DEFAULTS[section][key]
            ok = isinstance(value, type(default)) and not (isinstance(value, bool) and not isinstance(default, bool))
            if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
                ok = True
            if not ok:
                kind = "a table" if isinstance(default, dict) else type(default).__name__
                raise ConfigError("bad_config", f"{origin}: {section}.{key} must be {kind}")
            check = ITEM_CHECKS.get((section, key))
            if check is not None:
                _check_items(value, check, f"{origin}: {section}.{key}")
            values[section][key] = value


def _check_items(items: list, check, where: str) -> None:
    """Every item of a list setting, checked at load: one line naming the setting and the item."""
    for index, item in enumerate(items):
        problem = check(item) if isinstance(item, str) and len(item) <= 256 else "not a short string"
        if problem:
            raise ConfigError("bad_config", f"{where} item {index + 1} {str(item)[:80]!r}: {problem}")
    if len(set(map(str, items))) != len(items):
        raise ConfigError("bad_config", f"{where} names an item twice")
