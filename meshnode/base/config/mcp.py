"""``[mcp.servers.NAME]``: the MCP servers whose tools the agent may call, read strictly at start.

A server is reached over stdio (``command`` + ``args``, ``env``; run in the
gate's sandbox unless ``trusted = true``) or streamable HTTP (``url`` +
``token`` and ``headers``). ``risk`` is the level of its tools (default
``destructive``: a person confirms each call), ``[mcp.servers.NAME.tools]``
sets one tool's; ``timeout_seconds`` bounds each call; ``inline_seconds``
is how long the agent's tick waits for one (default 0: a call runs on beside
the tick, its result coming as a process result at the next tick, when the
agent would read an inline result too; a tick never waits for an outsider).
Every mistake is a
ConfigError naming the key (``meshnode run`` prints it and stops).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from meshnode.base.errors import ConfigError
# the gate's levels (meshnode.engines.gate.tools; not imported: config sits below the gate)
SAFE_READ, MODIFY, DESTRUCTIVE = "safe_read", "modify", "destructive"
RISKS = (SAFE_READ, MODIFY, DESTRUCTIVE)

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,31}")  # no "." or "_": mcp.NAME.tool and mcp__NAME__tool parse back
ALIASES = {"low": SAFE_READ, "medium": MODIFY, "high": DESTRUCTIVE, "asks": DESTRUCTIVE}
MAX_SERVERS = 32
MAX_INLINE_S = 10.0  # inline_seconds: what a tick may wait for one outside call
UNSHARED = ("/proc", "/dev", "/sys", "/etc", "/run", "/boot", "/workspace")  # never read_only (a folder in /tmp
# is shown inside the server's own /tmp, gate/mounts.py)
_KEYS = {"command", "args", "env", "url", "token", "headers", "risk", "tools", "trusted", "timeout_seconds",
         "inline_seconds", "network", "read_only", "memory_mib", "enabled"}
MCP_NOTES = ("outside tools: [mcp.servers.NAME] tables, each with command (+ args, env) for a stdio server or url"
        " (+ token, headers) for streamable HTTP; risk (safe_read|modify|destructive, default destructive: a person"
        " confirms each call) and [mcp.servers.NAME.tools] tool = level; trusted = true runs a stdio server"
        " outside the sandbox; timeout_seconds; inline_seconds (README, MCP: outside tools)")


@dataclass(frozen=True)
class ServerSettings:
    name: str
    command: tuple[str, ...] = ()  # program and arguments (stdio)
    env: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None  # streamable HTTP
    headers: Mapping[str, str] = field(default_factory=dict)  # the token as Authorization: Bearer among them
    risk: str = DESTRUCTIVE
    tools: Mapping[str, str] = field(default_factory=dict)  # tool -> level
    trusted: bool = False
    timeout_s: float = 30.0
    inline_s: float = 0.0  # a tick waits this long for a call; past it the call goes on beside the tick
    network: bool = False  # a sandboxed stdio server's network (off: its own empty network namespace)
    read_only: tuple[str, ...] = ()  # host folders a sandboxed server sees read-only (its program's, e.g. a venv)
    memory_bytes: int = 512 << 20

    @property
    def sandboxed(self) -> bool:
        return self.url is None and not self.trusted


def level(value: Any, where: str) -> str:
    if isinstance(value, str) and (value in RISKS or value in ALIASES):
        return ALIASES.get(value, value)
    raise ConfigError("bad_config", f"{where} = {value!r}: a level is {', '.join(RISKS)} (or low, medium, high)")


def parse(servers: Mapping[str, Any], home: str | os.PathLike | None = None) -> list[ServerSettings]:
    """Every enabled server of ``[mcp.servers]``; ConfigError naming the key that is wrong.
    ``home``: the node's folder (keys, tokens, config), which no ``read_only`` may share."""
    if not isinstance(servers, Mapping):
        raise ConfigError("bad_config", "mcp.servers must be a table of [mcp.servers.NAME] tables")
    if len(servers) > MAX_SERVERS:
        raise ConfigError("bad_config", f"mcp.servers: at most {MAX_SERVERS} servers")
    out = []
    for name, table in servers.items():
        where = f"mcp.servers.{name}"
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise ConfigError("bad_config", f"{where}: a server name is 1 to 32 letters, digits or - (no . or _)")
        if not isinstance(table, Mapping):
            raise ConfigError("bad_config", f"{where} must be a table")
        unknown = sorted(set(table) - _KEYS)
        if unknown:
            raise ConfigError("bad_config", f"{where}: unknown setting {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
        if _get(table, "enabled", bool, where, True):
            out.append(_server(name, table, where, home))
    return out


def _server(name: str, t: Mapping[str, Any], where: str, home) -> ServerSettings:
    command, url = t.get("command"), t.get("url")
    if (command is None) == (url is None):
        raise ConfigError("bad_config", f"{where}: give either command (a stdio server) or url (streamable HTTP)")
    args = _strings(_get(t, "args", list, where, []), f"{where}.args")
    env = _table(t, "env", where)
    for key in env:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", key):
            raise ConfigError("bad_config", f"{where}.env.{key}: not an environment variable name")
    headers = _table(t, "headers", where)
    if url is not None:
        if not isinstance(url, str) or not re.fullmatch(r"https?://[^\s]{1,2000}", url):
            raise ConfigError("bad_config", f"{where}.url = {str(url)[:80]!r}: an http:// or https:// URL")
        for key in ("args", "env", "trusted", "network", "read_only"):
            if key in t:
                raise ConfigError("bad_config", f"{where}.{key}: only for a stdio server (command), not a url")
    elif not isinstance(command, str) or not command.strip() or "\0" in command:
        raise ConfigError("bad_config", f"{where}.command: the program to run (a name or a path)")
    token = _get(t, "token", str, where, "")
    if token:
        if url is None:
            raise ConfigError("bad_config", f"{where}.token: only for a url")
        headers = {**headers, "Authorization": f"Bearer {token}"}
    tools = {tool: level(v, f"{where}.tools.{tool}") for tool, v in _table(t, "tools", where, str).items()}
    timeout = _get(t, "timeout_seconds", (int, float), where, 30.0)
    if not 0 < timeout <= 3600:
        raise ConfigError("bad_config", f"{where}.timeout_seconds = {timeout!r}: more than 0, at most 3600")
    inline = _get(t, "inline_seconds", (int, float), where, 0.0)
    if not 0 <= inline <= min(MAX_INLINE_S, timeout):
        raise ConfigError("bad_config", f"{where}.inline_seconds = {inline!r}: from 0 to {MAX_INLINE_S:g} (a tick"
                          " waits that long at most), and not above timeout_seconds")
    memory = _get(t, "memory_mib", int, where, 512)
    if not 16 <= memory <= 65536:
        raise ConfigError("bad_config", f"{where}.memory_mib = {memory!r}: from 16 to 65536")
    read_only = _strings(_get(t, "read_only", list, where, []), f"{where}.read_only")
    for path in read_only:
        _shareable(path, f"{where}.read_only", home)
    return ServerSettings(
        name=name, command=(command, *args) if command is not None else (), env=env, url=url, headers=headers,
        risk=level(t.get("risk", DESTRUCTIVE), f"{where}.risk"), tools=tools,
        trusted=_get(t, "trusted", bool, where, False), timeout_s=float(timeout), inline_s=float(inline),
        network=_get(t, "network", bool, where, False), read_only=tuple(read_only), memory_bytes=memory << 20)


def _shareable(path: str, where: str, home) -> None:
    """A folder a sandboxed server may read: absolute, not a system one (by prefix), and neither
    inside the node's home nor holding it (its keys, tokens and config)."""
    if not path.startswith("/") or ".." in path.split("/"):
        raise ConfigError("bad_config", f"{where}: {path[:80]!r} is not an absolute folder to share")
    real = os.path.realpath(path)
    for p in {path.rstrip("/") or "/", real}:
        if p in ("/", "/tmp") or any(p == root or p.startswith(root + "/") for root in UNSHARED):
            raise ConfigError("bad_config", f"{where}: {path[:80]!r} is (or is inside) a system folder a"
                              f" sandboxed server never reads ({', '.join(UNSHARED)}, / and /tmp itself)")
    if home is not None:
        node = os.path.realpath(home)
        if os.path.commonpath([real, node]) in (real, node):
            raise ConfigError("bad_config", f"{where}: {path[:80]!r} would share the node's home {node}"
                              " (its keys, tokens and config)")


def _get(t: Mapping, key: str, kind, where: str, default):
    value = t.get(key, default)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        names = kind.__name__ if isinstance(kind, type) else "a number"
        raise ConfigError("bad_config", f"{where}.{key} must be {names}, not {str(value)[:40]!r}")
    return value


def _table(t: Mapping, key: str, where: str, kind=str) -> dict:
    value = _get(t, key, dict, where, {})
    for k, v in value.items():
        if not isinstance(v, kind) or "\0" in str(v):
            raise ConfigError("bad_config", f"{where}.{key}.{k} must be text")
    return dict(value)


def _strings(items: list, where: str) -> list[str]:
    for item in items:
        if not isinstance(item, str) or "\0" in item:
            raise ConfigError("bad_config", f"{where}: {str(item)[:40]!r} is not text")
    return list(items)
