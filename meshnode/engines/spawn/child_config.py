"""The child's config.toml and bootstrap.txt.

The config is the parent's *effective* values (its file and its MESHNODE_* variables: the child is
later started without those variables, so what the parent runs with reaches the child through its
file) with the child's own name, ports, addresses and paths; the bootstrap names the parent's
addresses, loopback first, each ending in the parent's peer id.
"""

from __future__ import annotations

import copy
from pathlib import Path

import multiaddr

from meshnode.base.container.schema import known_classes
from meshnode.base.config import CONFIG_FILE, DEFAULTS, Config, config_text, load_config
from meshnode.base.errors import ConfigError
from meshnode.net.bootstrap import parse_bootstrap
from meshnode.engines.spawn.invitation import HELLO_CLASS, INVITATION_CLASS, LOOPBACK
from meshnode.base.errors import SpawnError
from meshnode.store.sharing import COGSYNC_FRIENDS
from meshnode.base.config.web import parse_listen

BOOTSTRAP_FILE = "bootstrap.txt"
LOCAL_CLASSES = (INVITATION_CLASS, HELLO_CLASS)  # point to point: never asked of peers
# paths that are the child's own: back to their defaults (relative to the child's home); and its MCP servers
# (their commands are this host's, their tokens the parent's secrets: a bundle must not carry them)
OWN_PATHS = (("store", "path"), ("keys", "path"), ("net", "bootstrap"), ("web", "token_path"),
             ("gate", "workspace"), ("gate", "scratch"), ("mcp", "servers"), ("a2a", "public_url"),
             ("a2a", "known_tokens_path"))
TLS_FILES = ("tls_cert", "tls_key")  # [web]: a local child serves with the parent's; a bundle's child with none


def listen_host(parent: Config) -> str:
    """The host part of the parent's first listen address (where the child's port is chosen)."""
    ma = multiaddr.Multiaddr(parent.get("net", "listen")[0])
    return ma.value_for_protocol("ip4") if "ip4" in [p.name for p in ma.protocols()] else ma.value_for_protocol("ip6")


def web_host(parent: Config) -> str:
    return parse_listen(parent.get("web", "listen"))[0]


def child_values(parent: Config, *, name: str, kind: str, listen_port: int, web_port: int, parent_did: str) -> dict:
    """The parent's effective values with the child's name, ports, paths, mentor and (for a newborn)
    what it takes from peers."""
    values = {section: copy.deepcopy(dict(keys)) for section, keys in parent.values.items()}
    if kind == "newborn":
        values["sync"]["classes"] = newborn_sync_classes(values["sync"]["classes"])
    values["node"]["name"] = name
    values["net"]["listen"] = [_with_port(a, listen_port) for a in values["net"]["listen"]]
    values["net"]["announce"] = []
    host = web_host(parent)
    values["web"]["listen"] = f"[{host}]:{web_port}" if ":" in host else f"{host}:{web_port}"
    for section, key in OWN_PATHS:
        values[section][key] = DEFAULTS[section][key]
    for key in TLS_FILES:  # the parent's files where they are: a relative path would name the child's home
        if values["web"][key]:
            values["web"][key] = str(parent.path("web", key))
    reactor = values["reactor"]  # the child's mentor is its parent (protocols/reactor.md, escalation)
    reactor["mentor"] = parent_did
    reactor["mentors"] = {agent: (parent_did if mentor == "self" else mentor)
                          for agent, mentor in reactor["mentors"].items() if agent not in ("self", parent_did)}
    return values


def newborn_sync_classes(parent_classes: list[str]) -> list[str]:
    """A newborn starts with no knowledge and keeps it that way: it takes every class its parent
    takes except diary entries, concepts and links, which a friend (its parent first of all) would
    otherwise hand it at the first sync. Emptying ``[sync] classes`` lets it learn from friends."""
    taken = parent_classes or sorted({cls for cls, _ in known_classes()} - set(LOCAL_CLASSES))
    kept = [cls for cls in taken if cls not in COGSYNC_FRIENDS]
    return kept or ["peer_announce"]  # an empty list would mean every class


def write(home: Path, parent: Config, *, name: str, kind: str, listen_port: int, web_port: int,
          parent_did: str) -> Config:
    """Write ``<home>/config.toml`` for the child and load it back (from the file alone) to check it."""
    values = child_values(parent, name=name, kind=kind, listen_port=listen_port, web_port=web_port,
                          parent_did=parent_did)
    (home / CONFIG_FILE).write_text(config_text(values), encoding="utf-8")
    try:
        return load_config(home, environ={})
    except ConfigError as exc:  # the parent's own values passed this check: a bug here, said plainly
        raise SpawnError("bad_child_config", f"the child's config does not load: {exc.reason}") from None


def _with_port(address: str, port: int) -> str:
    ma = multiaddr.Multiaddr(address)
    tcp = multiaddr.Multiaddr(f"/tcp/{ma.value_for_protocol('tcp')}")
    return str(ma.decapsulate(tcp).encapsulate(multiaddr.Multiaddr(f"/tcp/{port}")))


def is_loopback(address: str) -> bool:
    return address.startswith(LOOPBACK)


def bootstrap_lines(addresses: list[str], parent_peer_id: str) -> list[str]:
    """The parent's addresses, each ending in /p2p/<its peer id>, loopback first, no repeats."""
    suffix = f"/p2p/{parent_peer_id}"
    lines = []
    for a in addresses:
        line = a if a.endswith(suffix) else a + suffix
        if line not in lines:
            lines.append(line)
    return sorted(lines, key=lambda a: not is_loopback(a))  # stable: the parent's order otherwise


def write_bootstrap(home: Path, addresses: list[str], *, parent_peer_id: str, parent_did: str,
                    parent_name: str) -> list[str]:
    """Write ``<home>/bootstrap.txt``; returns the address lines. Checked as the node will read it:
    every line parses and names the parent, or nothing is written."""
    lines = bootstrap_lines(addresses, parent_peer_id)
    text = ("# Bootstrap peers: one libp2p multiaddr with /p2p/<peer id> per line (written by meshnode spawn).\n"
            + "".join(line + "\n" for line in lines) + f"# parent {parent_did} {parent_name}\n")
    peers, problems = parse_bootstrap(text)
    if problems or not peers or any(p.peer_id != parent_peer_id for p in peers):
        why = "; ".join(map(str, problems)) or "no address of the parent"
        raise SpawnError("parent_never_ran", f"the parent's addresses make no usable bootstrap.txt: {why}")
    (home / BOOTSTRAP_FILE).write_text(text, encoding="utf-8")
    return lines
