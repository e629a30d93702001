"""Reading the configuration: the defaults, then config.toml, then MESHNODE_* variables, then flags.

Each value is type-checked against its default as it is read, and a list's items against the section's
item checks, so an error names where the value came from (the file, the variable or "flags") and the
setting; the sections' ranges are checked once everything is merged (schema.check), and an error of
theirs gets the value of each setting it names and where that came from (``net.quiet_after_seconds =
30.0 in /home/x/config.toml``). The loaded Config remembers where each value came from (``origins``:
what ``meshnode config show`` prints).
"""

from __future__ import annotations

import logging
import os
import re
import tomllib
from pathlib import Path
from typing import Any, Mapping

from meshnode.base.config.model import CONFIG_FILE, Config
from meshnode.base.config.schema import DEFAULTS, ITEM_CHECKS, check
from meshnode.base.errors import ConfigError

log = logging.getLogger("meshnode.config")

# Settings an older meshnode read and this one no longer does: a config file that still sets one
# loads (with a warning naming what replaced it) rather than stopping the node at start.
RETIRED = {
    ("peers", "address_cutoffs"): "identities cut off no longer ban their address (issue 36); an address is"
                                  " banned for handshake-level abuse: peers.address_abuse, address_ban_seconds",
}

MAX_CONFIG_BYTES = 256 * 1024


def load_config(home: Path, overrides: Mapping[str, Mapping[str, Any]] | None = None,
                environ: Mapping[str, str] = os.environ, file_text: str | None = None) -> Config:
    """The configuration of ``home``; ``file_text``: config.toml's text as it would be, checked as the
    file is (``meshnode config set`` checks a change before it writes it)."""
    values = {section: dict(keys) for section, keys in DEFAULTS.items()}
    origins: dict[tuple[str, str], str] = {}
    file = home / CONFIG_FILE
    if file_text is not None:
        _merge(values, _parse_toml(file_text.encode("utf-8"), file), str(file), origins)
    elif file.exists():
        _merge(values, _read_toml(file), str(file), origins)
    for section, keys in _from_environ(environ).items():
        for key, value in keys.items():
            _merge(values, {section: {key: value}}, f"${env_name(section, key)}", origins)
    if overrides:
        _merge(values, {s: {k: v for k, v in kv.items() if v is not None} for s, kv in overrides.items()}, "flags",
               origins)
    checked(values, home, origins)
    return Config(home=home, values=values, origins=origins)


_SETTING = re.compile(r"\b([a-z0-9_]+)\.([a-z0-9_]+)\b")


def checked(values: dict, home: Path, origins: dict[tuple[str, str], str]) -> None:
    """schema.check, whose ConfigError then names each setting's value and where it came from (the file,
    a variable, flags or the default): "net.quiet_after_seconds < ...: net.quiet_after_seconds = 30.0 in
    /home/x/config.toml, ..."."""
    try:
        check(values, home)
    except ConfigError as exc:
        named = dict.fromkeys((s, k) for s, k in _SETTING.findall(exc.reason) if k in DEFAULTS.get(s, ()))
        if not named:
            raise
        where = ", ".join(f"{s}.{k} = {_shown(values[s][k])} {_from(origins.get((s, k)))}" for s, k in named)
        raise ConfigError(exc.code, f"{exc.reason} ({where})") from None


def _shown(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else '"' + value + '"'
    return text if len(text) <= 60 else text[:57] + "..."


def _from(origin: str | None) -> str:
    return "(the default)" if origin is None else f"in {origin}" if origin.endswith(CONFIG_FILE) else f"from {origin}"


def _read_toml(file: Path) -> dict:
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise ConfigError("unreadable_config", f"{file}: {exc.strerror}") from None
    return _parse_toml(raw, file)


def _parse_toml(raw: bytes, file: Path) -> dict:
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
            name = env_name(section, key)
            if name in environ:
                found.setdefault(section, {})[key] = parse_text(name, environ[name], default)
    return found


def env_name(section: str, key: str) -> str:
    """The variable that overrides ``section.key``: MESHNODE_<SECTION>_<KEY>."""
    return f"MESHNODE_{section}_{key}".upper()


def parse_text(name: str, raw: str, default: Any) -> Any:
    """A setting's value from text, of its default's type (an environment variable's, or the value of
    ``meshnode config set``): a boolean word, a number, a TOML inline table or array, items separated
    by commas, or the text itself; ConfigError naming ``name`` and ``raw`` otherwise."""
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


def _merge(values: dict, new: Mapping, origin: str, origins: dict[tuple[str, str], str]) -> None:
    for section, keys in new.items():
        if section not in DEFAULTS:
            raise ConfigError("bad_config", f"{origin}: unknown section [{section}]")
        if not isinstance(keys, Mapping):
            raise ConfigError("bad_config", f"{origin}: [{section}] must be a table")
        for key, value in keys.items():
            if (section, key) in RETIRED:
                log.warning("%s: %s.%s is no longer read: %s", origin, section, key, RETIRED[(section, key)])
                continue
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
            origins[(section, key)] = origin


def _check_items(items: list, check, where: str) -> None:
    """Every item of a list setting, checked at load: one line naming the setting and the item."""
    for index, item in enumerate(items):
        problem = check(item) if isinstance(item, str) and len(item) <= 256 else "not a short string"
        if problem:
            raise ConfigError("bad_config", f"{where} item {index + 1} {str(item)[:80]!r}: {problem}")
    if len(set(map(str, items))) != len(items):
        raise ConfigError("bad_config", f"{where} names an item twice")
