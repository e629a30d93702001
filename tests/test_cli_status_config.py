"""Issue 35: ``meshnode config show|get|set``, the text ``status``, and the defects of ``peers`` on a
stopped node (2), of a missing home (4), of ``ping`` to a stopped peer and of a liveness order in
config.toml that did not say where (11).

In-process (tests/cli_runner.py) but for one test with two node processes: what only a running node
shows (its pid and uptime, a ping that fails, a peer as a stopped node last knew it)."""

from __future__ import annotations

import json

import pytest

from meshharness import Node, wait_until
from meshnode.base.config import load_config
from meshnode.base.errors import ConfigError

FRIEND = "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp"


def one_line_failure(result, code: int = 1) -> str:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


# --- defect 4: a missing home is an error, and nothing is made ----------------------------------------------


@pytest.mark.parametrize("command", [("web", "url"), ("web", "url", "--rotate"), ("a2a", "token", "add", "bob"),
                                     ("a2a", "token", "list"), ("reactor", "rules"), ("config", "show"),
                                     ("config", "get", "net.listen"), ("config", "set", "node.name", "x"),
                                     ("status",), ("peers",)])
def test_a_command_on_a_missing_home_fails_and_makes_nothing(tmp_path, run_cli, command):
    missing = tmp_path / "nowhere"
    line = one_line_failure(run_cli("--home", missing, *command))
    assert str(missing) in line and "meshnode init" in line
    assert not missing.exists()
    empty = tmp_path / "empty"  # a folder, but not a node's home: no key in it
    empty.mkdir()
    line = one_line_failure(run_cli("--home", empty, *command))
    assert "meshnode init" in line and list(empty.iterdir()) == []


# --- config show | get | set -------------------------------------------------------------------------------


def test_config_show_says_where_each_value_comes_from(home, run_cli):
    text = (home / "config.toml").read_text().replace('name = "test"', 'name = "alice"')
    (home / "config.toml").write_text(text)
    result = run_cli("--home", home, "--log-level", "warning", "config", "show", "--json",
                     env={"MESHNODE_NET_SYNC_SECONDS": "5"})
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["node"]["name"] == {"value": "alice", "from": "config.toml"}
    assert shown["net"]["sync_seconds"] == {"value": 5.0, "from": "$MESHNODE_NET_SYNC_SECONDS"}
    assert shown["log"]["level"] == {"value": "warning", "from": "flags"}
    assert shown["net"]["dead_after_seconds"] == {"value": 300.0, "from": "default"}  # in the file, at its default
    changed = run_cli("--home", home, "config", "show", "--changed")
    assert changed.returncode == 0, changed.stderr
    assert 'node.name = "alice"' in changed.stdout and "(config.toml)" in changed.stdout
    assert "dead_after_seconds" not in changed.stdout
    net = run_cli("--home", home, "config", "show", "net").stdout.splitlines()
    assert net and all(line.startswith("net.") for line in net)
    assert one_line_failure(run_cli("--home", home, "config", "show", "nosuch")).startswith("meshnode: no section")


def test_config_get_prints_the_value_in_effect(home, run_cli):
    assert run_cli("--home", home, "config", "get", "node.name").stdout == "test\n"
    assert run_cli("--home", home, "config", "get", "net.dead_after_seconds").stdout == "300.0\n"
    listen = run_cli("--home", home, "config", "get", "net.listen", "--json")
    assert json.loads(listen.stdout) == ["/ip4/127.0.0.1/tcp/0"]  # the tests' $MESHNODE_NET_LISTEN
    line = one_line_failure(run_cli("--home", home, "config", "get", "net.nosuch"))
    assert "'net.nosuch' is not a setting" in line and "quiet_after_seconds" in line


def test_config_set_writes_one_setting_and_keeps_the_rest_of_the_file(home, run_cli):
    file = home / "config.toml"
    before = file.read_text()
    file.write_text(before.replace("[net]\n", "[net]\n# my own note about the network\n"))
    result = run_cli("--home", home, "config", "set", "net.quiet_after_seconds", "40")
    assert result.returncode == 0, result.stderr
    assert "net.quiet_after_seconds = 40.0" in result.stdout and "(was 25.0)" in result.stdout
    assert "the node is not running: net.quiet_after_seconds applies when it starts" in result.stdout
    after = file.read_text()
    assert "# my own note about the network\n" in after and "quiet_after_seconds = 40.0\n" in after
    changed = [(a, b) for a, b in zip(before.replace("[net]\n", "[net]\n# my own note about the network\n")
                                      .splitlines(), after.splitlines()) if a != b]
    assert changed == [("quiet_after_seconds = 25.0", "quiet_after_seconds = 40.0")]
    assert load_config(home, environ={}).get("net", "quiet_after_seconds") == 40.0
    listed = run_cli("--home", home, "config", "set", "net.announce", "/dns4/node.example.org/tcp/4101,/ip4/192.0.2.1/tcp/4101")
    assert listed.returncode == 0, listed.stderr
    assert load_config(home, environ={}).get("net", "announce") == ["/dns4/node.example.org/tcp/4101",
                                                                    "/ip4/192.0.2.1/tcp/4101"]
    logged = run_cli("--home", home, "config", "set", "log.level", "debug", env={"MESHNODE_LOG_LEVEL": "error"})
    assert "$MESHNODE_LOG_LEVEL is set here and overrides config.toml" in logged.stdout


@pytest.mark.parametrize("name, value, says", [
    ("net.max_connections", "abc", "net.max_connections='abc' is not a number"),
    ("net.max_connections", "5", "net.max_connections must be between 12 and 100000 (net.max_connections = 5 in"),
    ("net.quiet_after_seconds", "90", "net.quiet_after_seconds = 90.0 in"),  # the same check as start-up's
    ("net.listen", "/ip4/1.2.3/tcp/1", "net.listen item 1 '/ip4/1.2.3/tcp/1': base address '1.2.3' is not IPv4"),
    ("log.level", "loud", "log.level must be one of debug, info, warning, error"),
    ("cognition.enabled", "maybe", "cognition.enabled='maybe' is not a boolean"),
    ("net.nosuch", "1", "'net.nosuch' is not a setting"),
    ("nosuch", "1", "'nosuch' is not a setting"),
])
def test_config_set_refuses_what_start_up_refuses_and_leaves_the_file(home, run_cli, name, value, says):
    before = (home / "config.toml").read_bytes()
    line = one_line_failure(run_cli("--home", home, "config", "set", name, value))
    assert says in line, line
    assert (home / "config.toml").read_bytes() == before


# --- defect 11: a liveness order in config.toml names the file and the values -----------------------------


def test_a_wrong_liveness_order_names_the_file_and_the_values(home, run_cli):
    file = home / "config.toml"
    file.write_text(file.read_text().replace("quiet_after_seconds = 25.0", "quiet_after_seconds = 90.0"))
    with pytest.raises(ConfigError) as info:
        load_config(home, environ={})
    assert (f"net.quiet_after_seconds = 90.0 in {file}, net.stale_after_seconds = 60.0 in {file},"
            f" net.dead_after_seconds = 300.0 in {file}") in info.value.reason
    line = one_line_failure(run_cli("--home", home, "status", env={"MESHNODE_NET_STALE_AFTER_SECONDS": "20"}))
    assert "net.stale_after_seconds = 20.0 from $MESHNODE_NET_STALE_AFTER_SECONDS" in line


def test_a_failed_dial_names_the_peer_and_the_addresses_tried():
    """py-libp2p's SwarmDialAllFailedError (around a MultiError, around its SwarmException, around the
    socket's OSError) as a person's sentence."""
    import multiaddr
    from libp2p.exceptions import MultiError
    from libp2p.network.exceptions import SwarmDialAllFailedError, SwarmException
    from libp2p.peer.id import ID
    from libp2p.peer.peerinfo import PeerInfo

    from meshnode.base.identity.did import did_to_peer_id
    from meshnode.net.mesh_lookup import unreachable

    pid = ID.from_base58(did_to_peer_id(FRIEND))
    info = PeerInfo(pid, [multiaddr.Multiaddr(f"/ip4/127.0.0.1/tcp/4101/p2p/{pid}"),
                          multiaddr.Multiaddr("/ip6/::1/tcp/4101")])
    refused = ConnectionRefusedError(111, "Error connecting to ('127.0.0.1', 4101): Connection refused")
    try:
        try:
            try:
                raise refused
            except OSError as exc:
                raise SwarmException(f"fail to open connection to peer {pid}") from exc
        except SwarmException as exc:
            raise SwarmDialAllFailedError("unable to connect", peer_id=pid) from MultiError([exc])
    except SwarmDialAllFailedError as exc:
        failed = exc
    assert unreachable(info, failed) == (f"peer {FRIEND} is unreachable: tried /ip4/127.0.0.1/tcp/4101,"
                                         " /ip6/::1/tcp/4101 (connection refused)")


# --- the text status on a stopped node, and defect 2: peers as last known --------------------------------


def test_status_of_a_stopped_node_says_so_and_what_it_last_knew(home, run_cli):
    result = run_cli("--home", home, "status")
    assert result.returncode == 0, result.stderr
    lines = {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in result.stdout.splitlines()}
    assert lines["running"] == "no (it has never run); start it with `meshnode start`"
    assert lines["peers"].startswith("as last known: 0 ok, 0 quiet, 0 stale, 0 dead")
    assert lines["agent"] == "off — `meshnode llm add NAME --url http://127.0.0.1:11434/v1 --model MODEL` turns it on"
    assert lines["web"].startswith("not served (the node is stopped)")
    assert lines["waiting"] == "nothing"
    (home / "run").mkdir()
    (home / "run" / "node.pid").write_text("999999999\n")  # no such process
    assert "run/node.pid names pid 999999999, which no longer runs this node" in run_cli("--home", home, "status").stdout
    info = json.loads(run_cli("--home", home, "status", "--json").stdout)
    assert info["running"] is False and info["pid_file"] == {"pid": 999999999, "alive": False}
    assert info["peer_counts"] == {"ok": 0, "quiet": 0, "stale": 0, "dead": 0}
    assert info["agent"] == {"enabled": True, "llms": 0, "validators": 0} and info["waiting"]["total"] == 0


def test_peers_of_a_stopped_node_are_as_last_known_on_stderr_and_exit_3(home, run_cli):
    from meshnode.base.container.timefmt import now_ms
    from meshnode.store.database import Database
    from meshnode.store.peers import set_liveness, upsert_peer
    from meshnode.base.identity.did import did_to_peer_id

    db = Database(home / "data" / "meshnode.db")
    try:
        heard = now_ms() - 3_600_000  # an hour ago, and then the node was killed: its table still says ok
        upsert_peer(db, FRIEND, peer_id=did_to_peer_id(FRIEND), now_ms=heard, source="exchange", online=True)
        set_liveness(db, FRIEND, state="ok", last_heard_ms=heard, last_seq=1, now_ms=heard)
    finally:
        db.close()
    result = run_cli("--home", home, "peers")
    assert result.returncode == 3, result.stderr
    assert result.stderr == "meshnode: the node is not running: peers as last known (start it with `meshnode start`)\n"
    [row] = result.stdout.splitlines()[1:]
    assert row.split()[1:4] == ["dead", "offline", "-"] and "1h ago" in row and "online" not in row
    [listed] = json.loads(run_cli("--home", home, "peers", "--json").stdout)
    assert (listed["liveness"], listed["status"], listed["connected"]) == ("dead", "offline", False)
    assert json.loads(run_cli("--home", home, "status", "--json").stdout)["peer_counts"]["dead"] == 1


# --- a running node: status, config set, ping to a stopped peer, peers once stopped ------------------------


def test_running_nodes_status_config_set_ping_and_peers(tmp_path):
    alice, bob = Node(tmp_path, "alice"), Node(tmp_path, "bob")
    try:
        alice.start()
        bob.set_bootstrap(alice)
        bob.start()
        wait_until(lambda: any(p["did"] == alice.did and p.get("connected") for p in bob.call("peers")), 30,
                   "bob to be connected to alice")
        status = bob.run_cli("status")
        assert status.returncode == 0, status.stderr
        lines = status.stdout.splitlines()
        running = next(line for line in lines if line.startswith("running:"))
        assert running.startswith(f"running:   yes, pid {bob.proc.pid}, up ")
        assert [line.split()[1] for line in lines if line.startswith("address:")] == bob.addresses
        assert f"web:       {bob.web_url} (`meshnode web url` prints the login link)" in lines
        peers = next(line for line in lines if line.startswith("peers:"))
        assert peers.startswith("peers:     1 ok,") and peers.endswith("; 1 connected")
        assert "agent:     off — `meshnode llm add" in status.stdout and "waiting:   nothing" in status.stdout
        live = json.loads(bob.run_cli("status", "--json").stdout)
        assert live["running"] is True and live["pid"] == bob.proc.pid and live["uptime_seconds"] >= 0
        assert {"addresses", "connected", "liveness", "cognition", "web", "counts"} <= set(live)  # as before
        changed = bob.run_cli("config", "set", "node.name", "bobby")
        assert changed.returncode == 0, changed.stderr
        assert f"the running node (pid {bob.proc.pid}) keeps the old value until it restarts" in changed.stdout
        shown = bob.run_cli("config", "show", "node").stdout
        assert shown == 'node.name = "bobby"  (config.toml; the running node has "bob" until it restarts)\n'
        assert json.loads(bob.run_cli("config", "show", "--json").stdout)["node"]["name"]["running"] == "bob"
        got = bob.run_cli("config", "get", "node.name")
        assert (got.stdout, got.stderr) == ("bobby\n", 'meshnode: the running node has "bob" until it restarts\n')

        wait_until(lambda: "alice" in bob.run_cli("peers").stdout, 30, "bob to learn alice's name")
        named = bob.run_cli("ping", "alice")  # by name, and said by name (it printed the DID)
        assert named.returncode == 0 and named.stdout.startswith("alice: ") and named.stdout.endswith(" ms\n")
        itself = bob.run_cli("ping", "bob")  # pinging itself did nothing and put it in its own peers
        assert itself.returncode == 1 and "is this node itself" in itself.stderr
        alice.stop()
        pinged = bob.run_cli("ping", alice.did)  # defect 11: was "cannot reach ...: SwarmDialAllFailedError"
        line = one_line_failure(pinged)
        port = alice.addresses[0].split("/p2p/")[0]
        assert line.startswith(f"meshnode: peer {alice.did} is unreachable: tried ") and port in line, line
        assert "Error" not in line
        bob.stop()
        listed = bob.run_cli("peers")  # defect 2: the node is not running, and says so
        assert listed.returncode == 3 and "the node is not running" in listed.stderr
        [row] = [r for r in listed.stdout.splitlines() if alice.did in r]
        assert " online " not in row and " offline " in row
        not_running = bob.run_cli("ping", alice.did)  # needs the node: exit 3 as every such command
        assert not_running.returncode == 3 and "start it with `meshnode start`" in not_running.stderr
        stopped = bob.run_cli("status").stdout
        assert "running:   no (stopped " in stopped and "peers:     as last known: " in stopped
    finally:
        bob.stop()
        alice.stop()


def test_status_names_every_kind_of_inbox_item_waiting():
    """Each kind the inbox counts is said in `status` (a notice of a node with no LLM once read "nothing")."""
    from meshnode.faces.cli.node import _WAITING, _waiting
    from meshnode.records.inbox import KINDS

    assert {kind for kind, _ in _WAITING} | {"drafts_accepted"} == set(KINDS)
    assert _waiting({"by_kind": {"notice": 2, "task_unclaimed": 1}}) == \
        "2 notices, 1 unclaimed task (`meshnode inbox`)"
