"""meshnode.base.config: config.toml, then MESHNODE_* variables, then flags."""

from __future__ import annotations

import ipaddress
import os
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from meshnode.base.config import (
    CONFIG_FILE,
    DEFAULTS,
    MAX_CONFIG_BYTES,
    default_config_text,
    load_config,
    plain_ip_tcp,
    resolve_home,
)
from meshnode.base.container.model import DEFAULT_LIMITS, Limits
from meshnode.base.errors import ConfigError

NO_ENV: dict[str, str] = {}


@pytest.fixture(autouse=True)
def _fake_user_home(tmp_path, monkeypatch):
    """``~`` is a temporary folder in every test here."""
    user = tmp_path / "user"
    user.mkdir()
    monkeypatch.setenv("HOME", str(user))
    for name in [k for k in os.environ if k.startswith("MESHNODE_")]:
        monkeypatch.delenv(name)
    return user


@pytest.fixture
def home(tmp_path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


def write_config(home: Path, text: str) -> None:
    (home / CONFIG_FILE).write_text(text, encoding="utf-8")


def bad(home: Path, *, environ=NO_ENV, overrides=None) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(home, overrides, environ=environ)
    assert info.value.code == "bad_config", info.value.code
    return info.value


# --- defaults -------------------------------------------------------------------


def test_defaults_without_a_file(home):
    config = load_config(home, environ=NO_ENV)
    assert config.home == home
    assert {s: dict(v) for s, v in config.values.items()} == DEFAULTS
    assert config.name == "meshnode"
    assert config.key_path == home / "keys" / "node.key"
    assert config.db_path == home / "data" / "meshnode.db"
    assert config.get("log", "level") == "info"
    assert config.limits == DEFAULT_LIMITS


def test_defaults_are_not_mutated(home):
    write_config(home, '[node]\nname = "changed"\n')
    load_config(home, {"limits": {"max_depth": 64}}, environ={"MESHNODE_LOG_LEVEL": "debug"})
    assert DEFAULTS["node"]["name"] == "meshnode"
    assert DEFAULTS["limits"]["max_depth"] == 32
    assert DEFAULTS["log"]["level"] == "info"


def test_default_config_text_matches_defaults(home):
    text = default_config_text('my "odd" node\\name')
    parsed = tomllib.loads(text)
    assert parsed["node"]["name"] == 'my "odd" node\\name'
    expected = {s: dict(v) for s, v in DEFAULTS.items()}
    expected["node"]["name"] = 'my "odd" node\\name'
    assert parsed == expected
    write_config(home, text)
    assert load_config(home, environ=NO_ENV).name == 'my "odd" node\\name'


# --- precedence: file < environment < overrides ----------------------------------


def test_file_overrides_defaults(home):
    write_config(home, '[node]\nname = "fromfile"\n[limits]\nmax_depth = 40\n')
    config = load_config(home, environ=NO_ENV)
    assert config.name == "fromfile"
    assert config.get("limits", "max_depth") == 40
    assert config.get("limits", "clock_skew_seconds") == 300  # untouched keys keep their default


def test_environment_overrides_file(home):
    write_config(home, '[node]\nname = "fromfile"\n[limits]\nmax_depth = 40\n')
    env = {"MESHNODE_NODE_NAME": "fromenv", "MESHNODE_LIMITS_MAX_DEPTH": "50"}
    config = load_config(home, environ=env)
    assert config.name == "fromenv"
    assert config.get("limits", "max_depth") == 50
    assert type(config.get("limits", "max_depth")) is int


def test_overrides_beat_environment_and_file(home):
    write_config(home, '[node]\nname = "fromfile"\n')
    env = {"MESHNODE_NODE_NAME": "fromenv"}
    assert load_config(home, {"node": {"name": "fromflag"}}, environ=env).name == "fromflag"
    # a flag that was not given (None) does not hide the environment
    assert load_config(home, {"node": {"name": None}}, environ=env).name == "fromenv"
    assert load_config(home, {"store": {"path": None}, "keys": {"path": None}},
                       environ=NO_ENV).name == "fromfile"


def test_environment_read_from_os_environ_by_default(home, monkeypatch):
    monkeypatch.setenv("MESHNODE_NODE_NAME", "from-os-environ")
    assert load_config(home).name == "from-os-environ"


def test_unrelated_environment_ignored(home):
    config = load_config(home, environ={"MESHNODE_UNKNOWN_THING": "x", "NODE_NAME": "y", "meshnode_node_name": "z"})
    assert config.name == "meshnode"


# --- type errors ------------------------------------------------------------------


@pytest.mark.parametrize("toml, needle", [
    ('[limits]\nmax_depth = "x"\n', "limits.max_depth"),
    ("[limits]\nmax_depth = true\n", "limits.max_depth"),
    ("[limits]\nmax_depth = 3.5\n", "limits.max_depth"),
    ("[limits]\nclock_skew_seconds = 1.5\n", "limits.clock_skew_seconds"),
    ("[node]\nname = 5\n", "node.name"),
    ('[node]\nname = ["a"]\n', "node.name"),
    ("[store]\npath = 1\n", "store.path"),
    ("[keys]\npath = false\n", "keys.path"),
    ("node = 1\n", "[node]"),
    ('log = "debug"\n', "[log]"),
    ("[net]\nmax_connections = 36.0\n", "net.max_connections must be int"),
    ("[net]\nmax_connections = true\n", "net.max_connections must be int"),
])
def test_type_errors_in_file(home, toml, needle):
    write_config(home, toml)
    exc = bad(home)
    assert needle in exc.reason
    assert str(home / CONFIG_FILE) in exc.reason


@pytest.mark.parametrize("name, value", [
    ("MESHNODE_LIMITS_MAX_DEPTH", "x"),
    ("MESHNODE_LIMITS_MAX_DEPTH", "3.5"),
    ("MESHNODE_LIMITS_MAX_CONTAINER_BYTES", ""),
    ("MESHNODE_LIMITS_CLOCK_SKEW_SECONDS", "five"),
])
def test_type_errors_in_environment(home, name, value):
    exc = bad(home, environ={name: value})
    assert name in exc.reason


def test_type_error_in_overrides(home):
    exc = bad(home, overrides={"limits": {"max_depth": "deep"}})
    assert "limits.max_depth" in exc.reason


@pytest.mark.parametrize("toml, needle", [
    ("[limits]\nmax_depth = 3\n", "max_depth"),
    ("[limits]\nmax_depth = 257\n", "max_depth"),
    ("[limits]\nmax_container_bytes = 1023\n", "max_container_bytes"),
    ("[limits]\nmax_container_bytes = 67108865\n", "max_container_bytes"),
    ("[limits]\nclock_skew_seconds = -1\n", "clock_skew_seconds"),
    ("[limits]\nclock_skew_seconds = 86401\n", "clock_skew_seconds"),
    ("[limits]\nknown_min_trust = 1.5\n", "limits.known_min_trust"),
    ("[limits]\nunknown_author_containers = 0\n", "limits.unknown_author_containers"),
    ("[limits]\nunknown_total_mib = 0\n", "limits.unknown_total_mib"),
    ("[limits]\nunknown_gossip_per_second = 0.0\n", "limits.unknown_gossip_per_second"),
    ("[limits]\nunknown_peers = 5\n", "limits.unknown_peers"),
    ("[limits]\nunknown_author_containers = 100\nunknown_total_containers = 99\n", "limits.unknown_author_containers"),
    ("[limits]\nunknown_author_kib = 2048\nunknown_total_mib = 1\n", "unknown_author_kib"),
    ('[log]\nlevel = "loud"\n', "log.level"),
    ('[log]\nlevel = "INFO"\n', "log.level"),
    ('[node]\nname = ""\n', "node.name"),
    ('[node]\nname = "   "\n', "node.name"),
    (f'[node]\nname = "{"n" * 65}"\n', "node.name"),
    ("[net]\nmax_connections = 11\n", "net.max_connections must be between 12"),
    ("[net]\nmax_connections = 100001\n", "net.max_connections must be between 12"),
])
def test_out_of_range_values(home, toml, needle):
    write_config(home, toml)
    assert needle in bad(home).reason


def test_range_edges_accepted(home):
    write_config(home, "[limits]\nmax_depth = 4\nmax_container_bytes = 1024\nclock_skew_seconds = 0\n"
                       f'[node]\nname = "{"n" * 64}"\n')
    config = load_config(home, environ=NO_ENV)
    assert config.limits == Limits(max_bytes=1024, max_depth=4, clock_skew_ms=0)


# --- unknown keys and sections, unreadable files ---------------------------------------


def test_unknown_section_in_file(home):
    write_config(home, "[bogus]\nx = 1\n")
    exc = bad(home)
    assert "unknown section [bogus]" in exc.reason


def test_unknown_key_in_file(home):
    write_config(home, '[node]\nname = "n"\nnickname = "x"\n')
    assert "unknown setting node.nickname" in bad(home).reason


def test_a_retired_setting_loads_with_a_warning_naming_its_replacement(home, caplog):
    write_config(home, "[peers]\naddress_cutoffs = 3\naddress_abuse = 40\n")
    with caplog.at_level("WARNING", logger="meshnode.config"):
        config = load_config(home, environ=NO_ENV)
    peers = config.values["peers"]
    assert peers["address_abuse"] == 40 and "address_cutoffs" not in peers
    assert "peers.address_cutoffs is no longer read" in caplog.text and "address_abuse" in caplog.text


def test_unknown_section_or_key_in_overrides(home):
    assert "bogus" in bad(home, overrides={"bogus": {"x": 1}}).reason
    assert "node.nickname" in bad(home, overrides={"node": {"nickname": "x"}}).reason


def test_invalid_toml(home):
    write_config(home, "[node\nname = ")
    exc = bad(home)
    assert str(home / CONFIG_FILE) in exc.reason


def test_not_utf8(home):
    (home / CONFIG_FILE).write_bytes(b'[node]\nname = "\xff\xfe"\n')
    bad(home)


def test_too_large(home):
    write_config(home, "# " + "x" * MAX_CONFIG_BYTES + "\n")
    assert "larger" in bad(home).reason


def test_config_file_is_a_directory(home):
    (home / CONFIG_FILE).mkdir()
    with pytest.raises(ConfigError) as info:
        load_config(home, environ=NO_ENV)
    assert info.value.code == "unreadable_config"


# --- paths ----------------------------------------------------------------------------


def test_relative_paths_resolve_against_home(home):
    write_config(home, '[keys]\npath = "secret/id.key"\n[store]\npath = "../elsewhere/db.sqlite"\n')
    config = load_config(home, environ=NO_ENV)
    assert config.key_path == home / "secret" / "id.key"
    assert config.db_path == home / ".." / "elsewhere" / "db.sqlite"
    assert config.key_path.is_absolute() and config.db_path.is_absolute()


def test_absolute_paths_kept(home, tmp_path):
    key = tmp_path / "abs" / "node.key"
    db = tmp_path / "abs" / "node.db"
    write_config(home, f'[keys]\npath = "{key}"\n[store]\npath = "{db}"\n')
    config = load_config(home, environ=NO_ENV)
    assert config.key_path == key
    assert config.db_path == db


def test_paths_from_environment_and_overrides(home, tmp_path):
    config = load_config(home, {"store": {"path": "flag.db"}},
                         environ={"MESHNODE_KEYS_PATH": str(tmp_path / "env.key"), "MESHNODE_STORE_PATH": "env.db"})
    assert config.key_path == tmp_path / "env.key"
    assert config.db_path == home / "flag.db"


def test_tilde_expanded(home, _fake_user_home):
    write_config(home, '[store]\npath = "~/dbs/node.db"\n')
    assert load_config(home, environ=NO_ENV).db_path == _fake_user_home / "dbs" / "node.db"


# --- limits -----------------------------------------------------------------------------


def test_limits_mapping(home):
    write_config(home, "[limits]\nmax_container_bytes = 4096\nmax_depth = 8\nclock_skew_seconds = 7\n")
    limits = load_config(home, environ=NO_ENV).limits
    assert isinstance(limits, Limits)
    assert limits.max_bytes == 4096
    assert limits.max_depth == 8
    assert limits.clock_skew_ms == 7000
    assert type(limits.clock_skew_ms) is int


def test_limits_from_environment(home):
    limits = load_config(home, environ={"MESHNODE_LIMITS_CLOCK_SKEW_SECONDS": "60"}).limits
    assert limits.clock_skew_ms == 60_000


# --- home resolution ------------------------------------------------------------------------


def test_resolve_home_precedence(tmp_path, _fake_user_home):
    flag, env = tmp_path / "flag", tmp_path / "env"
    assert resolve_home(str(flag), {"MESHNODE_HOME": str(env)}) == flag
    assert resolve_home(None, {"MESHNODE_HOME": str(env)}) == env
    assert resolve_home(None, {}) == _fake_user_home / ".meshnode"
    assert resolve_home("", {}) == _fake_user_home / ".meshnode"


def test_resolve_home_makes_relative_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_home("rel/home", {}) == tmp_path / "rel" / "home"
    assert resolve_home(None, {"MESHNODE_HOME": "envrel"}) == tmp_path / "envrel"
    assert resolve_home("~/h", {}).is_absolute()


# --- addresses and DIDs are checked at load (one line naming the file or variable and the key) ----

GOOD_DID = "did:key:z6MkqXda7zF3MypptRKBM9pvXMv9NGim7CK5iMfz3NNXciGS"


@pytest.mark.parametrize("toml, needle", [
    ('[net]\nlisten = ["/ip4/1.2.3/tcp/1"]\n', "net.listen item 1 '/ip4/1.2.3/tcp/1': base address '1.2.3' is not IPv4"),
    ('[net]\nlisten = ["/ip4/127.0.0.1/tcp/0", "garbage"]\n', "net.listen item 2 'garbage'"),
    ('[net]\nlisten = ["/ip4/127.0.0.1/tcp/99999"]\n', "net.listen item 1"),
    ('[net]\nlisten = ["/ip4/127.0.0.1/udp/4001/quic-v1"]\n', "/ip4/ADDRESS/tcp/PORT"),
    ('[net]\nlisten = ["/ip4/127.0.0.1/tcp/1", "/ip4/127.0.0.1/tcp/1"]\n', "net.listen names an item twice"),
    ('[net]\nannounce = ["/dns4/node.example.org"]\n', "net.announce item 1"),
    ('[consensus]\ncommittee = ["did:key:zzz"]\n', "consensus.committee item 1 'did:key:zzz'"),
    (f'[consensus]\ncommittee = ["{GOOD_DID}", "{GOOD_DID[:-3]}"]\n', "consensus.committee item 2"),
    (f'[consensus]\ncommittee = ["{GOOD_DID}", "{GOOD_DID}"]\n', "consensus.committee names an item twice"),
])
def test_bad_addresses_and_dids_in_file(home, toml, needle):
    write_config(home, toml)
    exc = bad(home)
    assert needle in exc.reason and exc.reason.startswith(str(home / CONFIG_FILE) + ": ")
    assert "\n" not in exc.reason


def test_good_addresses_and_dids_accepted(home):
    write_config(home, '[net]\nlisten = ["/ip4/0.0.0.0/tcp/4001", "/ip6/::/tcp/4001"]\n'
                       'announce = ["/dns4/node.example.org/tcp/4001", "/ip4/192.0.2.7/tcp/4001"]\n'
                       f'[consensus]\ncommittee = ["{GOOD_DID}"]\n')
    config = load_config(home, environ=NO_ENV)
    assert config.get("consensus", "committee") == [GOOD_DID]


_octet = st.integers(0, 300).map(str) | st.sampled_from(["00", "01", "010", "1e2", ""])
_ip4 = st.lists(_octet, min_size=3, max_size=5).map(".".join)
_ip6 = st.integers(0, 2**128 - 1).map(lambda n: str(ipaddress.IPv6Address(n))) | st.from_regex(
    r"[0-9a-fA-F:.]{0,45}", fullmatch=True) | st.sampled_from(["::", "::1", "fe80::1%eth0", "::ffff:1.2.3.4", "1::2::3"])
_port = st.integers(-1, 70000).map(str) | st.sampled_from(["04001", "+1", " 1", "1_0", "٣"])


@settings(max_examples=400, deadline=None)
@given(st.tuples(st.sampled_from(["ip4", "ip6", "dns4"]), _ip4 | _ip6, _port).map("/{0[0]}/{0[1]}/tcp/{0[2]}".format)
       | st.text(max_size=40))
def test_the_plain_address_check_accepts_only_what_multiaddr_accepts(text):
    """``plain_ip_tcp`` spares loading multiaddr (and netaddr) for the common address: it must
    never accept what multiaddr would refuse, so the check at load stays as strict as before."""
    import multiaddr

    if plain_ip_tcp(text):
        assert [p.name for p in multiaddr.Multiaddr(text).protocols()] in (["ip4", "tcp"], ["ip6", "tcp"])


def test_the_plain_address_check_takes_the_usual_addresses():
    for text in ("/ip4/0.0.0.0/tcp/4001", "/ip4/127.0.0.1/tcp/0", "/ip6/::/tcp/4001", "/ip6/::1/tcp/65535"):
        assert plain_ip_tcp(text), text
    for text in ("/ip4/1.2.3/tcp/1", "/ip4/127.0.0.1/tcp/65536", "/ip4/127.0.0.1/tcp/04001", "/ip6/::1/udp/1"):
        assert not plain_ip_tcp(text), text  # left to multiaddr, whose reason the error quotes


def test_bad_address_in_environment_names_the_variable(home):
    exc = bad(home, environ={"MESHNODE_NET_LISTEN": "/ip4/1.2.3/tcp/1"})
    assert exc.reason.startswith("$MESHNODE_NET_LISTEN: net.listen item 1")


@pytest.mark.parametrize("raw", [
    "/ip4/127.0.0.1/tcp/4001,/ip6/::1/tcp/4001",
    " /ip4/127.0.0.1/tcp/4001 , /ip6/::1/tcp/4001 ",
    '["/ip4/127.0.0.1/tcp/4001", "/ip6/::1/tcp/4001"]',
])
def test_list_settings_in_the_environment(home, raw):
    config = load_config(home, environ={"MESHNODE_NET_LISTEN": raw})
    assert config.get("net", "listen") == ["/ip4/127.0.0.1/tcp/4001", "/ip6/::1/tcp/4001"]


def test_a_broken_toml_array_in_the_environment(home):
    exc = bad(home, environ={"MESHNODE_NET_LISTEN": '["/ip4/127.0.0.1/tcp/4001", '})
    assert "MESHNODE_NET_LISTEN" in exc.reason and "TOML array" in exc.reason


@pytest.mark.parametrize("toml, needle", [
    ("[peers]\ndecode_workers = 0\n", "peers.decode_workers"),
    ("[peers]\ncpu_ms_per_second = 0.0\n", "peers.cpu_ms_per_second"),
    ("[peers]\nframe_timeout_seconds = 0.1\n", "peers.frame_timeout_seconds"),
    ("[peers]\nsync_sessions = 2\nsync_sessions_per_peer = 3\n", "peers.sync_sessions_per_peer"),
    ("[peers]\nearly_push_weight = 0.5\n", "peers.early_push_weight"),
])
def test_limits_under_attack_are_checked_at_load(home, toml, needle):
    write_config(home, toml)
    assert needle in bad(home).reason


@pytest.mark.parametrize("toml, needle", [
    ("[gmp]\noffer_seconds = 5\n", "gmp.offer_seconds"),
    ("[gmp]\nreceipt_seconds = 0.1\n", "gmp.receipt_seconds"),
    ("[gmp]\ndead_grace_seconds = -1\n", "gmp.dead_grace_seconds"),
    ("[gmp]\ncheck_seconds = 0\n", "gmp.check_seconds"),
    ("[gmp]\noffer_seconds = 60\nreceipt_seconds = 60\n", "gmp.receipt_seconds"),
    ('[sync]\npublic_goals = "yes"\n', "sync.public_goals"),
])
def test_gmp_settings_are_checked_at_load(home, toml, needle):
    write_config(home, toml)
    assert needle in bad(home).reason


def test_gmp_settings_from_file_and_environment(home):
    write_config(home, "[gmp]\ndead_grace_seconds = 0\ncheck_seconds = 1\n[sync]\npublic_goals = true\n")
    config = load_config(home, environ={"MESHNODE_GMP_RECEIPT_SECONDS": "2.5"})
    assert (config.get("gmp", "dead_grace_seconds"), config.get("gmp", "check_seconds"),
            config.get("gmp", "receipt_seconds"), config.get("sync", "public_goals")) == (0, 1, 2.5, True)


def test_max_connections_from_the_environment_reaches_the_net_config(home):
    from meshnode.node.run import net_config

    assert "MESHNODE_NET_MAX_CONNECTIONS" in bad(home, environ={"MESHNODE_NET_MAX_CONNECTIONS": "36.5"}).reason
    for most in ("12", "36", "100000"):  # the range's edges and between
        config = load_config(home, environ={"MESHNODE_NET_MAX_CONNECTIONS": most})
        assert net_config(config).max_connections == int(most)
    assert net_config(load_config(home, environ=NO_ENV)).max_connections == 300


def test_default_max_connections_keeps_libp2p_limits():
    """At the default, the swarm gets py-libp2p 0.8.1's own limits (250 inbound slots); scaled
    down or up, they still pass its ConnectionConfig's checks (min <= low <= high <= max)."""
    from libp2p.network.config import ConnectionConfig

    from meshnode.net.inbound import connection_limits, inbound_slots

    default = ConnectionConfig()
    assert connection_limits(DEFAULTS["net"]["max_connections"]) == {
        "max_connections": default.max_connections, "min_connections": default.min_connections,
        "low_watermark": default.low_watermark, "high_watermark": default.high_watermark}
    assert inbound_slots(300) == 250
    assert connection_limits(12) == {"max_connections": 12, "min_connections": 2, "low_watermark": 4,
                                     "high_watermark": 12}
    for most in (12, 13, 30, 36, 299, 100_000):
        ConnectionConfig(**connection_limits(most))  # raises on limits out of order


# --- [reactor] (protocols/reactor.md section 13) -------------------------------------------------


def test_reactor_defaults_and_sub_tables_from_the_file(home):
    config = load_config(home, environ=NO_ENV)
    assert config.get("reactor", "enabled") is True and config.get("reactor", "scan_seconds") == 60
    assert config.get("reactor", "mentors") == {} and config.get("reactor", "external") == {}
    write_config(home, f'[reactor]\nscan_seconds = 5\nmentor = "{GOOD_DID}"\n'
                       f'[reactor.mentors]\nscout = "self"\n'
                       '[reactor.routes]\n"task.due" = "coordinator"\n'
                       '[reactor.external.scout]\ncommand = ["/bin/true"]\ntimeout_seconds = 60\n')
    config = load_config(home, environ=NO_ENV)
    assert config.get("reactor", "scan_seconds") == 5
    assert config.get("reactor", "mentors") == {"scout": "self"}
    assert config.get("reactor", "routes") == {"task.due": "coordinator"}
    assert config.get("reactor", "external")["scout"]["command"] == ["/bin/true"]


def test_reactor_settings_from_the_environment(home):
    config = load_config(home, environ={"MESHNODE_REACTOR_ENABLED": "false", "MESHNODE_REACTOR_SCAN_SECONDS": "0.5",
                                        "MESHNODE_REACTOR_MENTORS": f'{{self = "{GOOD_DID}"}}'})
    assert config.get("reactor", "enabled") is False and config.get("reactor", "scan_seconds") == 0.5
    assert config.get("reactor", "mentors") == {"self": GOOD_DID}
    exc = bad(home, environ={"MESHNODE_REACTOR_MENTORS": "{self = "})
    assert "MESHNODE_REACTOR_MENTORS" in exc.reason and "inline table" in exc.reason


def test_the_default_config_file_lets_the_person_fill_the_reactor_tables(home):
    text = default_config_text("n")
    assert "\n[reactor.mentors]\n" in text and "\n[reactor.external]\n" in text
    write_config(home, text.replace("[reactor.mentors]\n", f'[reactor.mentors]\nself = "{GOOD_DID}"\n'))
    assert load_config(home, environ=NO_ENV).get("reactor", "mentors") == {"self": GOOD_DID}


@pytest.mark.parametrize("toml, needle", [
    ("[reactor]\nscan_seconds = 0\n", "reactor.scan_seconds"),
    ("[reactor]\nscan_seconds = \"fast\"\n", "reactor.scan_seconds must be float"),
    ("[reactor]\nenabled = 1\n", "reactor.enabled"),
    ("[reactor]\nmax_jobs_per_scan = 0\n", "reactor.max_jobs_per_scan"),
    ("[reactor]\nquiet_hours = 30.0\n", "reactor.quiet_hours, stale_hours and dead_hours must grow"),
    ("[reactor]\ndedupe_days = 40.0\n", "reactor.dedupe_days"),
    ("[reactor]\nrules_off = [\"nosuchrule\"]\n", "reactor.rules_off"),
    ("[reactor]\ncoordinator = \"scout\"\n", "reactor.coordinator"),
    ("[reactor]\nwhatever = 1\n", "unknown setting reactor.whatever"),
    ("[reactor.external.scout]\ntimeout_seconds = 5\n", "reactor.external.scout.command"),
    ("[reactor.adapters.mon]\nevery_seconds = 60\n", "reactor.adapters.mon needs exactly one of"),
    ("[reactor.mentors]\nscout = 3\n", "reactor.mentors.scout must be a string"),
    ("[reactor]\nmentors = 3\n", "reactor.mentors must be a table"),
])
def test_reactor_settings_are_checked_at_load(home, toml, needle):
    write_config(home, toml)
    exc = bad(home)
    assert needle in exc.reason, exc.reason
    assert "\n" not in exc.reason
