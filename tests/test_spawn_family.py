"""records/family.py on real databases: both sides of a tie, the Friend tags, listing with the
liveness the node's tracker wrote, lookup by DID, prefix and name, removal, depth."""

from __future__ import annotations

from contextlib import closing as _closing
from pathlib import Path

import pytest

from meshnode.base.errors import StoreError
from meshnode.base.identity.keys import NodeKey
from meshnode.records import family
from meshnode.records.family import ChildRecord
from meshnode.base.errors import SpawnError
from meshnode.store import Database
from meshnode.store.peers import list_peers, set_liveness, upsert_peer
from meshnode.store.sharing import friends, set_friend
from meshnode.store.short_ids import short_agent_id

T0 = 1_780_000_000_000


@pytest.fixture
def db(tmp_path):
    d = Database(tmp_path / "parent.db")
    yield d
    d.close()


def _rec(name: str, **kw) -> ChildRecord:
    k = NodeKey.generate()
    return ChildRecord(did=k.did, peer_id=k.peer_id, name=name, kind=kw.pop("kind", "trained"),
                       depth=kw.pop("depth", 1), autostart=kw.pop("autostart", "none"), **kw)


def _peer(db: Database, did: str) -> dict:
    return next(p for p in list_peers(db) if p["did"] == did)


def _tags(db: Database, did: str) -> str | None:
    return db.conn.execute("SELECT tags FROM agent_peers WHERE id = ?", (did,)).fetchone()[0]


def test_record_child_writes_the_row_the_peer_and_the_friend_tag(db):
    rec = _rec("kid", home="/tmp/CCORE-x", listen_port=4101, web_port=8501,
               addresses=["/ip4/127.0.0.1/tcp/4101"], seed_report={"kind": "trained", "copied": {"notes": 2}})
    family.record_child(db, rec, T0)
    peer = _peer(db, rec.did)
    assert (peer["name"], peer["peer_id"], peer["addresses"]) == ("kid", rec.peer_id, ["/ip4/127.0.0.1/tcp/4101"])
    assert friends(db) == [rec.did]
    [row] = family.children(db)
    assert row["did"] == rec.did and row["state"] == "active" and row["depth"] == 1
    assert (row["home"], row["host"], row["listen_port"], row["web_port"]) == ("/tmp/CCORE-x", "local", 4101, 8501)
    assert row["liveness"] == "unknown" and row["last_heard_ms"] is None and row["created_ms"] == T0
    shown = family.child(db, rec.did)
    assert shown["addresses"] == rec.addresses and shown["seed_report"] == rec.seed_report
    assert shown["invitation"] is None
    assert family.count_active(db) == 1 and family.active_children(db) == [rec.did]


def test_record_child_is_one_transaction(db):
    """A second record of the same DID fails on the children row and leaves the peer row as it was."""
    rec = _rec("kid")
    family.record_child(db, rec, T0)
    again = ChildRecord(**{**rec.__dict__, "name": "renamed", "addresses": ["/ip4/10.0.0.9/tcp/1"]})
    with pytest.raises(StoreError):
        family.record_child(db, again, T0 + 1)
    assert _peer(db, rec.did)["name"] == "kid" and _peer(db, rec.did)["addresses"] == []


def test_a_known_peer_becomes_a_child_keeping_its_other_tags(db):
    rec = _rec("kid")
    upsert_peer(db, rec.did, peer_id=rec.peer_id, now_ms=T0, source="discovery", name="old name")
    db.conn.execute("UPDATE agent_peers SET tags = '[\"Colleague\"]' WHERE id = ?", (rec.did,))
    family.record_child(db, rec, T0 + 5)
    assert _tags(db, rec.did) == '["Colleague", "Friend"]' and _peer(db, rec.did)["name"] == "kid"


def test_tie_parent_writes_the_child_side(tmp_path):
    parent = NodeKey.generate()
    cdb = Database(tmp_path / "child.db")
    try:
        assert family.origin(cdb) is None and family.depth_of(cdb) == 0
        family.tie_parent(cdb, parent_did=parent.did, parent_peer_id=parent.peer_id, parent_name="mum",
                          addresses=["/ip4/127.0.0.1/tcp/7822"], kind="clone", depth=2, now_ms=T0)
        peer = _peer(cdb, parent.did)
        assert (peer["name"], peer["peer_id"], peer["addresses"]) == ("mum", parent.peer_id,
                                                                      ["/ip4/127.0.0.1/tcp/7822"])
        assert friends(cdb) == [parent.did]
        o = family.origin(cdb)
        assert (o["parent_did"], o["parent_name"], o["kind"], o["depth"], o["hello_state"]) == (
            parent.did, "mum", "clone", 2, "none")
        assert family.depth_of(cdb) == 2
        with pytest.raises(StoreError):  # one origin at most, and nothing half-written by a second tie
            family.tie_parent(cdb, parent_did="did:key:z6Mkother", parent_peer_id="x", parent_name="other",
                              addresses=[], kind="newborn", depth=1, now_ms=T0)
        assert friends(cdb) == [parent.did] and family.origin(cdb)["parent_name"] == "mum"
    finally:
        cdb.close()


def test_bundle_tie_keeps_the_invitation_and_hello_state(tmp_path):
    parent = NodeKey.generate()
    cdb = Database(tmp_path / "child.db")
    try:
        family.tie_parent(cdb, parent_did=parent.did, parent_peer_id=parent.peer_id, parent_name="mum",
                          addresses=[], kind="newborn", depth=1, now_ms=T0, invitation_id="ab" * 16,
                          invitation=b"\x01\x02", hello_state="pending")
        o = family.origin(cdb)
        assert o["invitation_id"] == "ab" * 16 and o["hello_state"] == "pending"
        assert cdb.conn.execute("SELECT invitation FROM spawn_origin").fetchone()[0] == b"\x01\x02"
    finally:
        cdb.close()


def test_children_list_joins_the_liveness_the_node_wrote(db):
    ok, dead, never = _rec("a"), _rec("b"), _rec("c")
    for i, r in enumerate((ok, dead, never)):
        family.record_child(db, r, T0 + i)
    set_liveness(db, ok.did, state="ok", last_heard_ms=T0 + 100, last_seq=3, now_ms=T0 + 100)
    set_liveness(db, dead.did, state="dead", last_heard_ms=T0 + 50, last_seq=1, now_ms=T0 + 900)
    got = {r["name"]: (r["liveness"], r["last_heard_ms"]) for r in family.children(db)}
    assert got == {"a": ("ok", T0 + 100), "b": ("dead", T0 + 50), "c": ("unknown", None)}
    assert [r["name"] for r in family.children(db)] == ["a", "b", "c"]  # oldest first


def test_child_by_prefix_short_id_and_name(db):
    a, b = _rec("alpha"), _rec("beta")
    family.record_child(db, a, T0)
    family.record_child(db, b, T0 + 1)
    body = a.did.removeprefix("did:key:")
    assert family.child(db, a.did)["name"] == "alpha"
    assert family.child(db, a.did[:20])["name"] == "alpha"
    assert family.child(db, body[:12])["name"] == "alpha"  # as in the home folder CCORE-<body>
    assert family.child(db, short_agent_id(b.did))["name"] == "beta"
    assert family.child(db, "beta")["did"] == b.did
    with pytest.raises(SpawnError) as exc:
        family.child(db, "did:key:z6Mk")  # both: too short to be meant
    assert exc.value.code == "not_a_child"
    with pytest.raises(SpawnError) as exc:
        family.child(db, NodeKey.generate().did)
    assert exc.value.code == "not_a_child"


def test_an_ambiguous_prefix_names_no_child(db):
    for tail in ("1", "2"):
        family.record_child(db, ChildRecord(did="did:key:z6MkSameStart" + tail, peer_id="p" + tail, name="twin" + tail,
                                            kind="newborn", depth=1, autostart="none"), T0)
    with pytest.raises(SpawnError, match="2 children"):
        family.child(db, "key:SameSt")
    assert family.child(db, "key:SameStart2")["did"] == "did:key:z6MkSameStart2"
    with pytest.raises(SpawnError, match="names no child"):
        family.child(db, "key:")


def test_two_active_children_never_share_a_name(db):
    """The table's unique index (migration children_unique_name), whatever process records them."""
    first = _rec("a")
    family.record_child(db, first, T0)
    with pytest.raises(SpawnError) as err:
        family.record_child(db, _rec("a"), T0)
    assert err.value.code == "name_taken"
    family.mark_removed(db, first.did, T0 + 1)
    family.record_child(db, _rec("a"), T0 + 2)  # a removed child's name is free again


def test_mark_removed_unfriends_and_keeps_the_row(db):
    a, b = _rec("a"), _rec("b")
    family.record_child(db, a, T0)
    family.record_child(db, b, T0)
    set_friend(db, "did:key:z6Mkfriend", "peer", T0)
    family.mark_removed(db, a.did, T0 + 10)
    assert friends(db) == sorted([b.did, "did:key:z6Mkfriend"])
    assert [r["did"] for r in family.children(db)] == [b.did]
    assert family.count_active(db) == 1 and family.active_children(db) == [b.did]
    [gone] = [r for r in family.children(db, include_removed=True) if r["did"] == a.did]
    assert gone["state"] == "removed" and gone["removed_ms"] == T0 + 10
    family.mark_removed(db, a.did, T0 + 99)  # again: nothing changes
    assert family.child(db, a.did)["removed_ms"] == T0 + 10
    assert a.did not in [p["did"] for p in list_peers(db)]  # issue 35: no longer in peers (a still running one comes back as any peer)
    assert gone["liveness"] == "-" and gone["last_heard_ms"] is None  # no longer followed
    with pytest.raises(SpawnError) as exc:
        family.mark_removed(db, NodeKey.generate().did, T0)
    assert exc.value.code == "not_a_child"


def test_set_friend_behaves_as_before(db):
    """The extracted conn-level helpers leave set_friend and upsert_peer as they were."""
    set_friend(db, "did:key:z6Mkx", "p1", T0)
    assert friends(db) == ["did:key:z6Mkx"] and _peer(db, "did:key:z6Mkx")["source"] == "exchange"
    set_friend(db, "did:key:z6Mkx", "p1", T0, friend=False)
    assert friends(db) == [] and _tags(db, "did:key:z6Mkx") == "[]"
    upsert_peer(db, "did:key:z6Mkx", peer_id="p2", now_ms=T0, source="bootstrap", online=True)
    p = _peer(db, "did:key:z6Mkx")
    assert (p["peer_id"], p["status"], p["source"]) == ("p2", "online", "exchange")


# --- the children CLI (no node running: the same family.py code on the database) ----------------

def _db_of(home):
    return Database(home / "data" / "meshnode.db", create=False)


def _did_of(home) -> str:
    import json

    return json.loads((home / "keys" / "node.key").read_text())["did"]


@pytest.fixture
def family_homes(home, run_cli, tmp_path):
    """A parent home and a child home made by `meshnode init`, tied by hand as a spawn ties them;
    the child listens on free ports (port 0) so that starting it collides with nothing."""
    child_home = tmp_path / "kid"
    assert run_cli("--home", child_home, "init", "--name", "kid").returncode == 0
    text = (child_home / "config.toml").read_text()
    text = text.replace('listen = ["/ip4/0.0.0.0/tcp/7822"]', 'listen = ["/ip4/127.0.0.1/tcp/0"]')
    (child_home / "config.toml").write_text(text.replace('listen = "127.0.0.1:8470"', 'listen = "127.0.0.1:0"'))
    parent_did, child_did = _did_of(home), _did_of(child_home)
    pdb, cdb = _db_of(home), _db_of(child_home)
    try:
        family.record_child(pdb, ChildRecord(did=child_did, peer_id="12D3KooWkid", name="kid", kind="newborn",
                                             depth=1, autostart="none", home=str(child_home)), T0)
        family.tie_parent(cdb, parent_did=parent_did, parent_peer_id="12D3KooWparent", parent_name="test",
                          addresses=[], kind="newborn", depth=1, now_ms=T0)
    finally:
        pdb.close()
        cdb.close()
    return home, child_home, child_did


def test_children_list_and_show_without_a_node(family_homes, run_cli):
    import json

    home, child_home, child_did = family_homes
    out = run_cli("--home", home, "children", "list")
    assert out.returncode == 0, out.stderr
    header, line = out.stdout.splitlines()
    assert header.split()[:8] == ["child", "name", "kind", "depth", "host", "state", "liveness", "last"]
    assert line.split() == [short_agent_id(child_did), "kid", "newborn", "1", "local", "stopped", "unknown", "never"]
    [row] = json.loads(run_cli("--home", home, "children", "list", "--json").stdout)
    assert row["did"] == child_did and row["depth"] == 1 and row["liveness"] == "unknown"
    shown = json.loads(run_cli("--home", home, "children", "show", "kid", "--json").stdout)
    assert shown["home"] == str(child_home) and shown["addresses"] == [] and shown["seed_report"] == {}
    missing = run_cli("--home", home, "children", "show", "nobody")
    assert missing.returncode == 1 and "names no child" in missing.stderr
    # the child's own store: a root's depth is 0, the child's 1, shown by `children list` at its children
    cdb = _db_of(child_home)
    try:
        assert family.depth_of(cdb) == 1 and family.origin(cdb)["parent_name"] == "test"
    finally:
        cdb.close()


def test_children_remove_refuses_to_delete_a_home_that_is_not_the_child_s(family_homes, run_cli, tmp_path):
    home, child_home, child_did = family_homes
    stranger = _rec("stranger", home=str(child_home))  # a row naming the kid's folder for another DID
    with _closing(_db_of(home)) as pdb:
        family.record_child(pdb, stranger, T0)
    out = run_cli("--home", home, "children", "remove", stranger.did, "--delete-home")
    assert out.returncode == 1 and "its key is not the child's" in out.stderr
    own = _rec("self", home=str(home))  # nor the parent's own home
    with _closing(_db_of(home)) as pdb:
        family.record_child(pdb, own, T0)
    out = run_cli("--home", home, "children", "remove", own.did, "--delete-home")
    assert out.returncode == 1 and "not a child's own folder" in out.stderr
    with _closing(_db_of(home)) as pdb:  # refused before anything changed
        assert {r["name"] for r in family.children(pdb)} == {"kid", "stranger", "self"}
    assert (child_home / "config.toml").is_file()


def test_children_remove_keeps_or_deletes_the_home(family_homes, run_cli):
    import json

    home, child_home, child_did = family_homes
    kept = run_cli("--home", home, "children", "remove", short_agent_id(child_did))
    assert kept.returncode == 0 and f"home kept: {child_home}" in kept.stdout and child_home.is_dir()
    assert run_cli("--home", home, "children", "list").stdout == ""  # a pipe gets no "(none)"
    [row] = json.loads(run_cli("--home", home, "children", "list", "--all", "--json").stdout)
    assert row["state"] == "removed"
    gone = run_cli("--home", home, "children", "remove", child_did, "--delete-home", "--json")
    assert gone.returncode == 0, gone.stderr
    assert json.loads(gone.stdout)["home_deleted"] == str(child_home.resolve()) and not child_home.exists()
    with _closing(_db_of(home)) as pdb:
        assert friends(pdb) == []


def test_children_remove_delete_home_takes_the_childs_systemd_unit_too(family_homes, run_cli, tmp_path, monkeypatch):
    """A unit left in ~/.config/systemd/user would start (and restart) a node whose home is gone."""
    from meshnode.engines.spawn import autostart

    home, child_home, child_did = family_homes
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setattr(autostart, "systemd_usable", lambda *, system: False)  # as in the CLI here: no systemd
    unit = Path(autostart.install(child_home, child_did, "kid", "systemd-user")["files"][0])
    assert unit.is_file() and unit.is_relative_to(tmp_path / "cfg")
    gone = run_cli("--home", home, "children", "remove", child_did, "--delete-home",
                   env={"XDG_CONFIG_HOME": str(tmp_path / "cfg")})
    assert gone.returncode == 0, gone.stderr
    assert not child_home.exists()
    assert not unit.exists()


def test_children_start_and_stop_a_local_child(family_homes, run_cli):
    import json

    from meshnode.net import control
    from meshharness import wait_until

    home, child_home, child_did = family_homes
    started = run_cli("--home", home, "children", "start", "kid", "--json")
    try:
        assert started.returncode == 0, started.stderr
        assert json.loads(started.stdout)["via"] == "direct"
        status = wait_until(lambda: _status(control, child_home), 60, "the child to answer on its control socket")
        assert status["did"] == child_did
    finally:
        stopped = run_cli("--home", home, "children", "stop", "kid", "--json")
    assert stopped.returncode == 0 and json.loads(stopped.stdout)["stopped"] is True, stopped.stderr
    again = run_cli("--home", home, "children", "stop", "kid")
    assert again.returncode == 0 and again.stdout.startswith("was not running")


def _status(control, home):
    try:
        return control.call(home / "data" / "control.sock", "status", {}, timeout=5)
    except control.ControlError:
        return None


def test_children_start_refuses_a_child_on_another_host(home, run_cli):
    far = _rec("far", host="203.0.113.7")
    with _closing(_db_of(home)) as pdb:
        family.record_child(pdb, far, T0)
    out = run_cli("--home", home, "children", "start", "far")
    assert out.returncode == 1 and "runs on another host" in out.stderr


def test_children_list_into_head_ends_quietly(home, fake_user_home):
    """`meshnode children list | head -1` with more rows than a pipe holds: exit 141, no traceback."""
    import subprocess
    import sys

    from clienv import cli_env

    with _closing(_db_of(home)) as pdb, pdb.transaction() as conn:
        conn.executemany("INSERT INTO children (did, peer_id, name, kind, depth, autostart, created_ms)"
                         " VALUES (?, 'p', ?, 'newborn', 1, 'none', ?)",
                         [(f"did:key:z6Mkkid{i:05d}", f"kid{i}", T0 + i) for i in range(3000)])
    script = f"{sys.executable} -m meshnode --home {home} children list | head -1; echo \"${{PIPESTATUS[0]}}\""
    out = subprocess.run(["bash", "-c", script], env=cli_env(fake_user_home), capture_output=True, text=True,
                         timeout=60)
    lines = out.stdout.splitlines()
    assert lines[0].startswith("child") and lines[-1] == "141", out
    assert out.stderr == ""



def test_a_prefix_is_case_sensitive(db):
    """Base58 tells a from A: a prefix in the wrong case names no child (SQL LIKE would match it)."""
    family.record_child(db, ChildRecord(did="did:key:z6MkAbcdefgh", peer_id="p", name="kid", kind="newborn",
                                        depth=1, autostart="none"), T0)
    assert family.child(db, "key:Abcdef")["name"] == "kid"
    with pytest.raises(SpawnError, match="names no child"):
        family.child(db, "key:abcdef")


def test_liveness_is_aged_by_the_silence_since_last_heard():
    """A stored "ok" from a run that has since stopped is not believed for ever."""
    ages = family.thresholds_of({"quiet_after_seconds": 25, "stale_after_seconds": 60, "dead_after_seconds": 300})
    assert ages == (25_000, 60_000, 300_000)
    heard = 1_000_000
    assert family.aged("ok", heard, heard + 10_000, ages) == "ok"
    assert family.aged("ok", heard, heard + 30_000, ages) == "quiet"
    assert family.aged("ok", heard, heard + 61_000, ages) == "stale"
    assert family.aged("quiet", heard, heard + 300_000, ages) == "dead"
    assert family.aged("dead", heard, heard + 1_000, ages) == "dead"  # never better than what was written
    assert family.aged("unknown", None, heard, ages) == "unknown"


def test_a_remote_childs_host_name_is_shown_on_one_printable_line():
    from meshnode.engines.spawn.invitation import shown_host

    assert shown_host("far.example") == "far.example"
    assert shown_host("evil\nkey:AAAA  forged  clone") == "evil?key:AAAA??forged??clone"
    assert shown_host("\x1b[31mred") == "?[31mred"
    assert shown_host("") == shown_host(None) == shown_host(5) == "remote"
    assert len(shown_host("h" * 300)) == 64


def test_the_running_node_shows_what_its_tracker_heard_not_the_last_change():
    """The stored row changes only with the state: a child heard a second ago whose row says "ok
    since an hour ago" is ok and heard a second ago; one this run never heard is aged."""
    from types import SimpleNamespace

    from meshnode.base.container import now_ms
    from meshnode.net.liveness import LivenessTracker, Thresholds
    from meshnode.app.actions.children import as_heard
    from meshnode.app.context import App

    heard_did, silent_did = NodeKey.generate().did, NodeKey.generate().did
    now = now_ms()
    tracker = LivenessTracker(Thresholds(25_000, 60_000, 300_000))
    tracker.heard(heard_did, now - 1000)
    app = App(None, None, mesh=SimpleNamespace(liveness=tracker),  # only what as_heard reads
              config=SimpleNamespace(values={"net": {"quiet_after_seconds": 25, "stale_after_seconds": 60,
                                                     "dead_after_seconds": 300}}))
    hour_ago = now - 3_600_000
    shown = as_heard(app, {"did": heard_did, "liveness": "ok", "last_heard_ms": hour_ago})
    assert shown["liveness"] == "ok" and shown["last_heard_ms"] == now - 1000
    shown = as_heard(app, {"did": silent_did, "liveness": "ok", "last_heard_ms": hour_ago})
    assert shown["liveness"] == "dead" and shown["last_heard_ms"] == hour_ago
