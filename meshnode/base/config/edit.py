"""Changing one setting of config.toml (``meshnode config set SECTION.KEY VALUE``).

The value is read from text as an environment variable's is (``loader.parse_text``: of the default's
type), the file's new text is made with tomlkit (its comments, order and other settings stay as
they are) and checked by the loader exactly as ``meshnode run`` checks the file at start-up
(``load_config`` with that text and no environment): a change start-up would refuse is refused
here, with the loader's own reason, and the file is left as it was. There is no second validator.

The node reads its configuration when it starts: a change reaches a running node at its next start
(``RUNTIME`` names the settings a command also changes in the running node, now).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from meshnode.base.config.loader import MAX_CONFIG_BYTES, env_name, load_config, parse_text
from meshnode.base.config.model import CONFIG_FILE
from meshnode.base.config.schema import DEFAULTS
from meshnode.base.errors import ConfigError

MAX_VALUE_CHARS = 4096
# (section, key) -> the command that changes it in the running node too (the file: at the next start)
RUNTIME: dict[tuple[str, str], str] = {("log", "level"): "meshnode log-level LEVEL"}


@dataclass(frozen=True)
class Change:
    section: str
    key: str
    old: Any  # the file's value before (the default when the file did not set it)
    new: Any
    file: Path
    overridden_by: str | None  # the variable of this environment that overrides the file's value, if set


def setting(name: str) -> tuple[str, str]:
    """``section.key`` as the pair; ConfigError ``unknown_setting`` naming it otherwise."""
    section, dot, key = name.partition(".")
    if not dot or section not in DEFAULTS or key not in DEFAULTS[section]:
        shown = name if len(name) <= 80 else name[:77] + "..."
        known = f"[{section}] has {', '.join(DEFAULTS[section])}" if section in DEFAULTS and DEFAULTS[section] \
            else "`meshnode config show` lists them"
        raise ConfigError("unknown_setting", f"{shown!r} is not a setting (SECTION.KEY, e.g. net.listen;"
                                             f" {known})")
    return section, key


def set_value(home: Path, name: str, raw: str, environ=os.environ) -> Change:
    """Write ``section.key = raw`` (as its type) into the home's config.toml, once the loader accepts the
    whole file with it; ConfigError (the file unchanged) when it does not."""
    section, key = setting(name)
    if len(raw) > MAX_VALUE_CHARS:
        raise ConfigError("bad_config", f"the value for {section}.{key} is longer than {MAX_VALUE_CHARS} characters")
    value = parse_text(f"{section}.{key}", raw, DEFAULTS[section][key])
    file = home / CONFIG_FILE
    text = _read(file)
    new_text = _with(text, section, key, value)
    try:
        load_config(home, environ={}, file_text=new_text)
    except ConfigError as exc:
        raise ConfigError(exc.code, f"not set ({file} unchanged): {exc.reason}") from None
    old = tomllib.loads(text).get(section, {}).get(key, DEFAULTS[section][key])
    _write(file, new_text)
    variable = env_name(section, key)
    return Change(section, key, old, value, file, variable if variable in environ else None)


def _read(file: Path) -> str:
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise ConfigError("unreadable_config", f"{file}: {exc.strerror}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError("bad_config", f"{file} is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
        tomllib.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError("bad_config", f"{file}: {exc}; fix it by hand first") from None
    return text


def _with(text: str, section: str, key: str, value: Any) -> str:
    """``text`` with ``section.key`` set to ``value``, everything else as it was (tomlkit keeps it)."""
    import tomlkit  # only this command needs it

    doc = tomlkit.parse(text)
    if section not in doc:
        doc.add(section, tomlkit.table())
    table = doc[section]
    if not isinstance(table, dict):
        raise ConfigError("bad_config", f"[{section}] in config.toml is not a table; fix it by hand first")
    table[key] = value
    return tomlkit.dumps(doc)


def _write(file: Path, text: str) -> None:
    """Replace ``file`` at once (a reader sees the old file or the new one), with the old file's mode."""
    try:
        mode = file.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o600
    temporary = file.with_name(f".{file.name}.{os.getpid()}.new")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, file)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise ConfigError("unwritable_config", f"{file}: {exc.strerror}") from None
