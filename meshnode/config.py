"""Node configuration: config.toml in the home, then MESHNODE_* variables, then flags.

The home directory is the node's whole world (HMP nodes live in their own
folder): ``config.toml``, ``keys/``, ``bootstrap.txt`` and the database. A
spawned child later gets a sibling home of its own. Relative paths in the
config are relative to the home.

Every setting has a section and a key (``[store] path``); the environment
variable for it is ``MESHNODE_<SECTION>_<KEY>`` in upper case
(``MESHNODE_STORE_PATH``). Values are type-checked against the defaults. A
list-valued setting is given in a variable as items separated by commas
(``MESHNODE_NET_LISTEN=/ip4/0.0.0.0/tcp/4001,/ip6/::/tcp/4001``) or as a TOML
array (``MESHNODE_NET_LISTEN='["/ip4/0.0.0.0/tcp/4001"]'``); empty is an
empty list. Addresses and DIDs are checked when the configuration is loaded,
and an error names the file (or variable) and the setting.
"""

from __future__ import annotations

import ipaddress
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from meshnode.errors import ConfigError, IdentityError, MeshnodeError
from meshnode.gate.outbound import confirm_policy
from meshnode.identity.did import public_key_from_did
from meshnode.reactor.settings import DEFAULTS as REACTOR_DEFAULTS, ReactorConfig
from meshnode.web.settings import WEB_DEFAULTS, WEB_NOTES, check_web
from meshnode.a2a.settings import A2A_DEFAULTS, A2A_NOTES, a2a_settings  # [a2a]: the agent's A2A face

if TYPE_CHECKING:
    from meshnode.container.model import Limits

HOME_ENV = "MESHNODE_HOME"
CONFIG_FILE = "config.toml"
MAX_CONFIG_BYTES = 256 * 1024

# what unknown authors and peers may make this node hold (store/quotas.py, net/author_rate.py;
# the reasons for each default are in protocols/mesh.md "Storage quotas")
STRANGER_LIMITS: dict[str, Any] = {
    "known_min_trust": 0.7,
    "unknown_author_containers": 64,
    "unknown_author_kib": 1024,
    "unknown_total_containers": 16384,
    "unknown_total_mib": 64,
    "unknown_gossip_per_second": 0.2,
    "unknown_gossip_burst": 32,
    "unknown_gossip_total_per_second": 10.0,
    "unknown_gossip_total_burst": 50,
    "unknown_peers": 2000,
}

DEFAULTS: dict[str, dict[str, Any]] = {
    "node": {"name": "meshnode"}, "keys": {"path": "keys/node.key"}, "store": {"path": "data/meshnode.db"},
    "limits": {"max_container_bytes": 256 * 1024, "max_depth": 32, "max_items": 16384, "clock_skew_seconds": 300,
               **STRANGER_LIMITS},
    "log": {"level": "info"},
    "net": {
        "listen": ["/ip4/0.0.0.0/tcp/4001"],
        "announce": [],
        "bootstrap": "bootstrap.txt",
        "heartbeat_seconds": 10.0,
        "gossip_heartbeat_seconds": 1.0,
        "sync_seconds": 30.0,
        "reputation_seconds": 60.0,
        "reputation_first_seconds": 10.0,
        "quiet_after_seconds": 25.0,
        "stale_after_seconds": 60.0,
        "dead_after_seconds": 300.0,
        "max_connections": 300,
        "interests": [],
        "expertise": [],
        "roles": [],
    },
    "sync": {"classes": [], "tags": [], "window_days": 0.0, "min_trust": 0.0, "public_goals": False},
    # GMP (protocols/gmp.md sections 6 and 8; the reason for each default is in README, Settings)
    "gmp": {"offer_seconds": 3600.0, "receipt_seconds": 60.0, "dead_grace_seconds": 600.0, "check_seconds": 30.0},
    "consensus": {
        "committee": [],
        "propose_ms": 1000,
        "prevote_ms": 500,
        "precommit_ms": 500,
        "round_delta_ms": 500,
        "resend_ms": 2000,
        "emergency_seconds": 30.0,
        "block_values": 256,
        "block_kib": 256,
        "request_batch_ms": 50,
    },
    "gate": {
        "workspace": "workspace",
        "programs": [],
        "network": False,
        "command_timeout_seconds": 30.0,
        "process_timeout_seconds": 3600.0,
        "cpu_seconds": 10,
        "memory_mb": 512,
        "max_processes": 64,
        "max_output_kib": 256,
        "scratch": "",
        "risk": {},
        "risk_rules": [],
        "http_hosts": [],
        "confirm_hours": 1.0,
        "max_calls_per_task": 200,
        "calls_quiet_seconds": 600.0,
        "outbound_confirm": ["public", "stranger"],
        "loop_window": 20,
        "loop_repeats": 3,
        "offer_tools": False,
    },
    "cognition": {"enabled": True, "pause_seconds": 5.0, "recent_responses": 5, "peer_validators": 3,
                  "peer_validation_min_trust": 0.7, "peer_validation_seconds": 60.0,
                  "validator_failures": 3, "validator_retry_seconds": 300.0, "keep_tick_traces": 200},
    # the reactor (protocols/reactor.md section 13); its sub-tables are [reactor.NAME] tables of their own
    "reactor": {**REACTOR_DEFAULTS, "mentors": {}, "routes": {}, "external": {}, "adapters": {}},
    "peers": {
        "max_frame_bytes": 1024 * 1024,
        "messages_per_second": 50.0,
        "burst": 100,
        "max_outstanding": 8,
        "invalid_threshold": 20,
        "ban_seconds": 600.0,
        "max_records": 4096,
        "cpu_ms_per_second": 100.0,
        "cpu_burst_ms": 2000.0,
        "known_factor": 10.0,
        "address_factor": 4.0,
        "subnet_factor": 8.0,
        "connections_per_minute": 60.0,
        "address_cutoffs": 3,
        "address_streams": 32,
        "decode_workers": 2,
        "decode_queue": 64,
        "inline_bytes": 8192,
        "frame_timeout_seconds": 10.0,
        "sync_sessions": 8,
        "sync_sessions_per_peer": 2,
    },
    # the web notebook (protocols/web.md section 12; the reason for each default is in README, Web notebook)
    "web": dict(WEB_DEFAULTS), "a2a": dict(A2A_DEFAULTS), "mcp": {"servers": {}},
    # spawning child nodes (protocols/spawn.md; the reason for each default is in README, Spawn)
    "spawn": {"autostart": "none", "wait_seconds": 30.0, "invitation_hours": 24.0, "max_children": 16, "max_depth": 3},
}
_LOG_LEVELS = ("debug", "info", "warning", "error")
REACTOR_TABLES = ("mentors", "routes", "external", "adapters")  # [reactor.mentors] etc.: tables, not scalars
# a well-formed DID standing in for this node's at load (the key is not read then); the driver uses the real one
_LOAD_SELF_ID = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"


@dataclass(frozen=True)
class Config:
    home: Path
    values: Mapping[str, Mapping[str, Any]]

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
        from meshnode.container.model import Limits  # (the container model loads cbor2: not every command needs it)

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
    _check(values)
    check_web(values["web"], home)
    a2a_settings(values)  # [a2a] ranges (meshnode/a2a/settings.py)
    return Config(home=home, values=values)


_SECTION_NOTES = {
    "node": "who this node is",
    "keys": "the key file (mode 0600; never commit it)",
    "store": "the SQLite database",
    "limits": "what a container may be: size, nesting, data items, clock skew (see protocols/container.md);"
              " what unknown authors may make this node store and relay, and how many unknown peers it"
              " remembers (protocols/mesh.md, Storage quotas)",
    "log": "debug, info, warning or error",
    "net": "libp2p: listen/announce multiaddrs, bootstrap file, heartbeats and liveness thresholds,"
           " connections at most (about five sixths of them inbound)",
    "sync": "what this node takes from peers: classes, tags (any of), days back (0: all), minimum peer trust;"
            " public_goals: also take goals (and their tasks) that anyone may see",
    "gmp": "goals and tasks across the mesh: how long an offer stays open, when an offer without a receipt"
           " is pushed again, how long an assignee may be dead before its task is offered again, and how"
           " often this node looks for such tasks (protocols/gmp.md sections 6 and 8)",
    "consensus": "MeshConsensus: the genesis committee (validator DIDs, the same list on every node) and timeouts",
    "gate": "what the cognitive core may do to this host: its workspace folder, the programs it may run"
            " (empty: a small read-mostly default set), and their limits; the budget of tool calls per piece"
            " of work (max_calls_per_task, restarted after calls_quiet_seconds without calls); which sends out"
            " of the node wait for a person (outbound_confirm: public, friends, stranger, friend)",
    "cognition": "the REPL cycle: on or off, the pause between ticks, how many own responses each tick sees,"
                 " how many trusted peers (friends, or trust >= min) validate its answers, and after how many"
                 " failures in a row a validator is set aside (asked again after validator_retry_seconds)",
    "reactor": "the reactor: scans the node's signals every scan_seconds and wakes an agent only when something"
               " needs it, with cooldowns and budgets; escalates to a mentor, then to you, when a wake leaves no"
               " trace (protocols/reactor.md). Sub-tables: [reactor.mentors] agent = mentor, [reactor.routes]"
               " event type = route, [reactor.external.NAME] command = [...], [reactor.adapters.NAME] command = [...]",
    "peers": "per-peer limits: frames, message rate, outstanding requests, cut-off after invalid input (weighed"
             " by its cost); CPU budgets per peer, address and subnet; connections per address; the decoding"
             " worker pool; sync sessions and frame timeout (see protocols/mesh.md, Limits under attack)",
    "web": WEB_NOTES, "a2a": A2A_NOTES,  # "mcp": mcp_tools.settings' note, read when the text is written
    "spawn": "child nodes (meshnode spawn): autostart systemd-user, systemd-system, script or none; how long"
             " --start waits for the child to be reachable; how long a bundle's invitation stays valid; at most"
             " max_children active children, and a family at most max_depth generations deep",
}


def default_config_text(name: str) -> str:
    """config.toml with every setting at its default (and ``name``), one commented section each."""
    return config_text({**DEFAULTS, "node": {**DEFAULTS["node"], "name": name}})


def config_text(values: Mapping[str, Mapping[str, Any]]) -> str:
    """config.toml holding ``values`` (every section of DEFAULTS), one commented section each
    (a spawned child's config is the parent's effective values written this way)."""
    lines = [
        "# meshnode configuration. Environment variables MESHNODE_<SECTION>_<KEY> override it,",
        "# command-line flags override both. Relative paths are relative to this folder.",
        "# A list in a variable: items separated by commas, or a TOML array:",
        "#   MESHNODE_NET_LISTEN=/ip4/0.0.0.0/tcp/4001,/ip6/::/tcp/4001",
    ]
    for section in DEFAULTS:
        keys = values[section]
        lines += ["", f"# {_section_note(section)}", f"[{section}]"]
        tables = [k for k in keys if (section == "reactor" and k in REACTOR_TABLES) or isinstance(keys[k], dict)]
        for key, value in keys.items():
            if key not in tables:
                lines.append(f"{key} = {_toml_value(value)}")
        for key in tables:  # tables the person fills in (an inline {} could not be extended)
            lines.append(f"[{section}.{key}]")
            lines += [f"{_toml_str(k)} = {_toml_value(v)}" for k, v in keys[key].items()]
    return "\n".join(lines) + "\n"


def _section_note(section: str) -> str:
    if section == "mcp":  # [mcp.servers.NAME]: the agent's outside tools (their module is not needed to load)
        from meshnode.mcp_tools.settings import MCP_NOTES

        return MCP_NOTES
    return _SECTION_NOTES[section]


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return _toml_str(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):  # an inline table
        return "{" + ", ".join(f"{_toml_str(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v))


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


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
            check = _ITEM_CHECKS.get((section, key))
            if check is not None:
                _check_items(value, check, f"{origin}: {section}.{key}")
            values[section][key] = value


_IP_TCP = re.compile(r"/(ip4|ip6)/([0-9a-f.:]+)/tcp/(0|[1-9][0-9]{0,4})")


def plain_ip_tcp(text: str) -> bool:
    """Whether ``text`` is ``/ip4/ADDRESS/tcp/PORT`` or ``/ip6/ADDRESS/tcp/PORT`` with the address in
    its canonical form and the port in range: a subset of what multiaddr parses as those two
    protocols, checked without loading multiaddr (and netaddr, which its ip4 and ip6 codecs load).
    Anything else is left to multiaddr, whose reasons the errors quote."""
    match = _IP_TCP.fullmatch(text)
    if match is None or int(match[3]) > 65535:
        return False
    kind = ipaddress.IPv4Address if match[1] == "ip4" else ipaddress.IPv6Address
    try:
        return str(kind(match[2])) == match[2]
    except ValueError:
        return False


def _protocols(text: str) -> list[str]:
    """The protocol names of the multiaddr ``text`` (ValueError or TypeError: not one)."""
    import multiaddr

    return [p.name for p in multiaddr.Multiaddr(text).protocols()]


def _listen_address(text: str) -> str | None:
    """Why ``text`` is not an address this node can listen on (None when it is one)."""
    if plain_ip_tcp(text):
        return None
    try:
        protocols = _protocols(text)
    except (ValueError, TypeError) as exc:  # multiaddr's parse errors are ValueErrors
        return _parse_problem(exc)
    if protocols[:1] not in (["ip4"], ["ip6"]) or protocols[1:] != ["tcp"]:
        return "a listen address is /ip4/ADDRESS/tcp/PORT or /ip6/ADDRESS/tcp/PORT"
    return None


def _announce_address(text: str) -> str | None:
    if plain_ip_tcp(text):
        return None
    try:
        protocols = _protocols(text)
    except (ValueError, TypeError) as exc:
        return _parse_problem(exc)
    if "tcp" not in protocols:
        return "an announced address names a TCP port, e.g. /dns4/node.example.org/tcp/4001"
    return None


def _parse_problem(exc: Exception) -> str:
    """multiaddr's reason without the repeated address: "base address '1.2.3' is not IPv4"."""
    text = str(exc).split(" (string:")[0]
    return text.split("': ", 1)[1] if text.startswith("Invalid MultiAddr '") and "': " in text else text


def _did(text: str) -> str | None:
    try:
        public_key_from_did(text)
    except IdentityError as exc:
        return exc.reason
    return None


_ITEM_CHECKS = {("net", "listen"): _listen_address, ("net", "announce"): _announce_address,
                ("consensus", "committee"): _did}


def _check_items(items: list, check, where: str) -> None:
    """Every item of a list setting, checked at load: one line naming the setting and the item."""
    for index, item in enumerate(items):
        problem = check(item) if isinstance(item, str) and len(item) <= 256 else "not a short string"
        if problem:
            raise ConfigError("bad_config", f"{where} item {index + 1} {str(item)[:80]!r}: {problem}")
    if len(set(map(str, items))) != len(items):
        raise ConfigError("bad_config", f"{where} names an item twice")


def _check(values: dict) -> None:
    limits = values["limits"]
    # the ceiling bounds the worst case of one decode (many tiny maps cost ~85x their size in memory)
    if not 1024 <= limits["max_container_bytes"] <= 16 * 1024 * 1024:
        raise ConfigError("bad_config", "limits.max_container_bytes must be between 1 KiB and 16 MiB")
    if not 4 <= limits["max_depth"] <= 256:
        raise ConfigError("bad_config", "limits.max_depth must be between 4 and 256")
    # the item count bounds the decode cost whatever the size (about 1 us per item, worst shape)
    if not 1024 <= limits["max_items"] <= 1024 * 1024:
        raise ConfigError("bad_config", "limits.max_items must be between 1024 and 1048576")
    if not 0 <= limits["clock_skew_seconds"] <= 86400:
        raise ConfigError("bad_config", "limits.clock_skew_seconds must be between 0 and 86400")
    _check_stranger_limits(limits)
    if values["log"]["level"] not in _LOG_LEVELS:
        raise ConfigError("bad_config", f"log.level must be one of {', '.join(_LOG_LEVELS)}")
    check_name(values["node"]["name"])
    net = values["net"]
    for key in ("listen", "announce", "interests", "expertise", "roles"):
        if not all(isinstance(item, str) and 0 < len(item) <= 256 for item in net[key]) or len(net[key]) > 64:
            raise ConfigError("bad_config", f"net.{key} must be a list of at most 64 short strings")
    if not net["listen"]:
        raise ConfigError("bad_config", "net.listen needs at least one address")
    if not 0.2 <= net["sync_seconds"] <= 86400:
        raise ConfigError("bad_config", "net.sync_seconds must be between 0.2 and 86400")
    if not 1 <= net["reputation_seconds"] <= 86400:
        raise ConfigError("bad_config", "net.reputation_seconds must be between 1 and 86400")
    if not 0.1 <= net["reputation_first_seconds"] <= net["reputation_seconds"]:
        raise ConfigError("bad_config", "net.reputation_first_seconds must be from 0.1 to net.reputation_seconds")
    if not 0.1 <= net["gossip_heartbeat_seconds"] <= 60:
        raise ConfigError("bad_config", "net.gossip_heartbeat_seconds must be between 0.1 and 60")
    if not 0.05 <= net["heartbeat_seconds"] <= 3600:
        raise ConfigError("bad_config", "net.heartbeat_seconds must be between 0.05 and 3600")
    if not 0 < net["quiet_after_seconds"] < net["stale_after_seconds"] < net["dead_after_seconds"]:
        raise ConfigError("bad_config", "net: quiet_after < stale_after < dead_after seconds, all positive")
    if not 12 <= net["max_connections"] <= 100_000:  # a whole number (checked as it was read)
        raise ConfigError("bad_config", "net.max_connections must be between 12 and 100000")
    sync = values["sync"]
    for key in ("classes", "tags"):
        if not all(isinstance(item, str) and 0 < len(item) <= 64 for item in sync[key]) or len(sync[key]) > 64:
            raise ConfigError("bad_config", f"sync.{key} must be a list of at most 64 short names")
    if not 0 <= sync["window_days"] <= 36500:
        raise ConfigError("bad_config", "sync.window_days must be between 0 (no limit) and 36500")
    if not 0 <= sync["min_trust"] <= 1:
        raise ConfigError("bad_config", "sync.min_trust must be between 0 and 1")
    _check_gmp(values["gmp"])
    consensus = values["consensus"]
    if len(consensus["committee"]) > 1000:  # each DID was checked when it was read
        raise ConfigError("bad_config", "consensus.committee is a list of at most 1000 did:key DIDs")
    for key in ("propose_ms", "prevote_ms", "precommit_ms", "round_delta_ms", "resend_ms"):
        if not 10 <= consensus[key] <= 600_000:
            raise ConfigError("bad_config", f"consensus.{key} must be between 10 and 600000")
    if not 1 <= consensus["emergency_seconds"] <= 86400:
        raise ConfigError("bad_config", "consensus.emergency_seconds must be between 1 and 86400")
    if type(consensus["block_values"]) is not int or not 1 <= consensus["block_values"] <= 4096:
        raise ConfigError("bad_config", "consensus.block_values must be a whole number from 1 to 4096")
    if not 0 <= consensus["request_batch_ms"] <= 1000:
        raise ConfigError("bad_config", "consensus.request_batch_ms must be between 0 and 1000")
    if type(consensus["block_kib"]) is not int or not 17 <= consensus["block_kib"] <= 512:
        raise ConfigError("bad_config", "consensus.block_kib must be a whole number from 17 to 512")
    cognition = values["cognition"]
    if not 0.05 <= cognition["pause_seconds"] <= 86400:
        raise ConfigError("bad_config", "cognition.pause_seconds must be between 0.05 and 86400")
    if not 0 <= cognition["recent_responses"] <= 100:
        raise ConfigError("bad_config", "cognition.recent_responses must be between 0 and 100")
    gate = values["gate"]
    if not 1 <= gate["command_timeout_seconds"] <= 3600 or not 1 <= gate["process_timeout_seconds"] <= 7 * 86400:
        raise ConfigError("bad_config", "gate.command_timeout_seconds must be 1..3600 and"
                          " gate.process_timeout_seconds 1..604800")
    if not 1 <= gate["cpu_seconds"] <= 86400 or not 16 <= gate["memory_mb"] <= 65536 \
            or not 1 <= gate["max_processes"] <= 4096 or not 1 <= gate["max_output_kib"] <= 65536:
        raise ConfigError("bad_config", "gate limits: cpu_seconds 1..86400, memory_mb 16..65536,"
                          " max_processes 1..4096, max_output_kib 1..65536")
    if not 0.01 <= gate["confirm_hours"] <= 24 * 30 or not 1 <= gate["max_calls_per_task"] <= 100_000 \
            or not 2 <= gate["loop_window"] <= 1000 or not 1 <= gate["loop_repeats"] <= gate["loop_window"]:
        raise ConfigError("bad_config", "gate: confirm_hours 0.01..720, max_calls_per_task 1..100000,"
                          " loop_window 2..1000, loop_repeats 1..loop_window")
    if not 1 <= gate["calls_quiet_seconds"] <= 7 * 86400:
        raise ConfigError("bad_config", "gate.calls_quiet_seconds must be between 1 and 604800")
    try:
        confirm_policy(gate["outbound_confirm"])
    except MeshnodeError as exc:
        raise ConfigError("bad_config", exc.reason) from None
    if not 0 <= cognition["peer_validators"] <= 16:
        raise ConfigError("bad_config", "cognition.peer_validators must be between 0 and 16")
    if not 0 <= cognition["peer_validation_min_trust"] <= 1:
        raise ConfigError("bad_config", "cognition.peer_validation_min_trust must be between 0 and 1")
    if not 1 <= cognition["peer_validation_seconds"] <= 600:
        raise ConfigError("bad_config", "cognition.peer_validation_seconds must be between 1 and 600")
    if not 1 <= cognition["validator_failures"] <= 1000 or not 1 <= cognition["validator_retry_seconds"] <= 86400:
        raise ConfigError("bad_config", "cognition.validator_failures must be 1..1000 and"
                          " cognition.validator_retry_seconds 1..86400")
    if not 1 <= cognition["keep_tick_traces"] <= 100_000:
        raise ConfigError("bad_config", "cognition.keep_tick_traces must be between 1 and 100000")
    peers = values["peers"]
    if not 1024 <= peers["max_frame_bytes"] <= 16 * 1024 * 1024:
        raise ConfigError("bad_config", "peers.max_frame_bytes must be between 1 KiB and 16 MiB")
    for key in ("messages_per_second", "burst", "max_outstanding", "invalid_threshold", "ban_seconds"):
        if peers[key] <= 0:
            raise ConfigError("bad_config", f"peers.{key} must be positive")
    _check_load_limits(peers)
    check_reactor(values["reactor"])
    _check_spawn(values["spawn"])


SPAWN_AUTOSTARTS = ("systemd-user", "systemd-system", "script", "none")
_SPAWN_RANGES = {"wait_seconds": (1.0, 600.0), "invitation_hours": (0.01, 168.0), "max_children": (0, 1000),
                 "max_depth": (1, 16)}


def _check_spawn(spawn: Mapping[str, Any]) -> None:
    if spawn["autostart"] not in SPAWN_AUTOSTARTS:
        raise ConfigError("bad_config", f"spawn.autostart must be one of {', '.join(SPAWN_AUTOSTARTS)}")
    for key, (lo, hi) in _SPAWN_RANGES.items():
        if not lo <= spawn[key] <= hi:
            raise ConfigError("bad_config", f"spawn.{key} must be between {lo:g} and {hi:g}")


def check_reactor(reactor: Mapping[str, Any], self_id: str = _LOAD_SELF_ID) -> ReactorConfig:
    """``[reactor]`` as the reactor's settings; every range and sub-table checked (one line naming the setting)."""
    try:
        return ReactorConfig.from_mapping(reactor, self_id=self_id)
    except ValueError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else "reactor: invalid settings"
        raise ConfigError("bad_config", reason if reason.startswith("reactor") else f"reactor: {reason}") from None


_LOAD_RANGES = {  # [peers] settings of the limits under attack: (lowest, highest)
    "max_records": (64, 1_000_000), "cpu_ms_per_second": (1.0, 1000.0), "cpu_burst_ms": (10.0, 600_000.0),
    "known_factor": (1.0, 1000.0), "address_factor": (1.0, 1000.0), "subnet_factor": (1.0, 1000.0),
    "connections_per_minute": (1.0, 100_000.0), "address_cutoffs": (1, 1000), "address_streams": (1, 10_000),
    "decode_workers": (1, 64), "decode_queue": (1, 100_000), "inline_bytes": (0, 1024 * 1024),
    "frame_timeout_seconds": (0.5, 600.0), "sync_sessions": (1, 1000), "sync_sessions_per_peer": (1, 100),
}


def _check_load_limits(peers: Mapping[str, Any]) -> None:
    for key, (lo, hi) in _LOAD_RANGES.items():
        if not lo <= peers[key] <= hi:
            raise ConfigError("bad_config", f"peers.{key} must be between {lo} and {hi}")
    if peers["sync_sessions_per_peer"] > peers["sync_sessions"]:
        raise ConfigError("bad_config", "peers.sync_sessions_per_peer must not exceed peers.sync_sessions")


_GMP_RANGES = {  # [gmp] settings, in seconds: (lowest, highest)
    "offer_seconds": (10.0, 30 * 86400.0),
    "receipt_seconds": (0.5, 86400.0),
    "dead_grace_seconds": (0.0, 30 * 86400.0),
    "check_seconds": (0.1, 86400.0),
}


def _check_gmp(gmp: Mapping[str, Any]) -> None:
    for key, (lo, hi) in _GMP_RANGES.items():
        if not lo <= gmp[key] <= hi:
            raise ConfigError("bad_config", f"gmp.{key} must be between {lo:g} and {hi:g} seconds")
    if gmp["receipt_seconds"] >= gmp["offer_seconds"]:
        raise ConfigError("bad_config", "gmp.receipt_seconds must be shorter than gmp.offer_seconds")


_STRANGER_RANGES = {  # setting: (lowest, highest)
    "known_min_trust": (0.0, 1.0),
    "unknown_author_containers": (1, 1_000_000),
    "unknown_author_kib": (1, 1024 * 1024),
    "unknown_total_containers": (1, 100_000_000),
    "unknown_total_mib": (1, 1024 * 1024),
    "unknown_gossip_per_second": (0.001, 10_000.0),
    "unknown_gossip_burst": (1, 1_000_000),
    "unknown_gossip_total_per_second": (0.001, 100_000.0),
    "unknown_gossip_total_burst": (1, 1_000_000),
    "unknown_peers": (10, 10_000_000),
}


def _check_stranger_limits(limits: dict) -> None:
    for key, (low, high) in _STRANGER_RANGES.items():
        if not low <= limits[key] <= high:
            raise ConfigError("bad_config", f"limits.{key} must be between {low:g} and {high:g}")
    if limits["unknown_author_containers"] > limits["unknown_total_containers"] \
            or limits["unknown_author_kib"] > limits["unknown_total_mib"] * 1024:
        raise ConfigError("bad_config", "limits.unknown_author_containers and unknown_author_kib must not exceed"
                          " limits.unknown_total_containers and unknown_total_mib")


def check_name(name: str) -> None:
    """A node's display name: 1 to 64 printable characters."""
    if not name.strip() or len(name) > 64 or not name.isprintable():
        raise ConfigError("bad_config", "node.name must be 1 to 64 printable characters")
