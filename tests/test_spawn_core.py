"""spawn_child's own steps, in-process on a stopped parent (seeding faked: tests/test_spawn_kinds.py
covers it): the child's config and bootstrap, its home, the refusals before anything is written,
and the undo of every step when a later one fails."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from meshnode.base.config import load_config
from meshnode.base.errors import ConfigError
from meshnode.net.bootstrap import read_bootstrap
from meshnode.engines.spawn import autostart, child_config, service
from meshnode.engines.spawn.model import SpawnSettings
from meshnode.base.errors import SpawnError
from meshnode.store.database import Database
from spawnlab import Parent, fake_seed, root, spawn_parent  # noqa: F401 (fixtures)


def entries(place: Path) -> set[str]:
    return {p.name for p in place.iterdir()}


def refused(code: str, fn, *args, **kwargs) -> SpawnError:
    with pytest.raises(SpawnError) as err:
        fn(*args, **kwargs)
    assert err.value.code == code, err.value.reason
    return err.value


def test_child_config_is_the_parents_effective_one_with_its_own_name_ports_and_paths(spawn_parent, fake_seed):
    r = spawn_parent.spawn("newborn")
    home = Path(r.home)
    written = tomllib.loads((home / "config.toml").read_text())
    assert written["net"]["heartbeat_seconds"] == 0.5  # from the parent's environment, now in the file
    assert written["node"]["name"] == r.name == "par-newborn-1"
    listen = written["net"]["listen"]
    assert len(listen) == 1 and listen[0].startswith("/ip4/127.0.0.1/tcp/")
    assert int(listen[0].rsplit("/", 1)[1]) not in spawn_parent.ports()
    assert written["net"]["announce"] == [] and written["net"]["bootstrap"] == "bootstrap.txt"
    assert written["web"]["listen"].startswith("127.0.0.1:") and written["web"]["listen"] == r.web_listen
    assert written["store"]["path"] == "data/meshnode.db" and written["keys"]["path"] == "keys/node.key"
    assert written["reactor"]["mentor"] == spawn_parent.key.did
    child = load_config(home, environ={})  # the file alone: the child runs without the parent's variables
    assert child.db_path == home / "data" / "meshnode.db" and child.key_path.exists()
    assert SpawnSettings.from_config(child) == SpawnSettings.from_config(spawn_parent.config)
    assert fake_seed.calls == [{"source": spawn_parent.config.db_path, "child": child.db_path, "kind": "newborn",
                                "parent_did": spawn_parent.key.did}]
    db = Database(child.db_path, create=False)
    try:
        assert db.conn.execute("SELECT id FROM identity").fetchone()[0] == r.did != spawn_parent.key.did
    finally:
        db.close()


def test_bootstrap_names_the_parent_loopback_first_then_a_comment(spawn_parent):
    r = spawn_parent.spawn("newborn")
    text = (Path(r.home) / "bootstrap.txt").read_text()
    peers, problems = read_bootstrap(Path(r.home) / "bootstrap.txt")
    assert problems == [] and [p.did for p in peers] == [spawn_parent.key.did]
    assert r.bootstrap == [f"/ip4/127.0.0.1/tcp/{spawn_parent.listen_port}/p2p/{spawn_parent.key.peer_id}"]
    assert text.rstrip("\n").splitlines()[-1] == f"# parent {spawn_parent.key.did} par"
    pid = spawn_parent.key.peer_id
    lines = child_config.bootstrap_lines(["/ip4/192.0.2.7/tcp/4001", f"/ip4/127.0.0.1/tcp/4001/p2p/{pid}",
                                          "/ip4/192.0.2.7/tcp/4001"], pid)
    assert lines == [f"/ip4/127.0.0.1/tcp/4001/p2p/{pid}", f"/ip4/192.0.2.7/tcp/4001/p2p/{pid}"]


def test_default_home_is_ccore_did_beside_the_parent_and_names_count_up(spawn_parent):
    a, b = spawn_parent.spawn("newborn"), spawn_parent.spawn("trained")
    c = spawn_parent.spawn("newborn")
    assert Path(a.home) == spawn_parent.home.parent / ("CCORE-" + a.did.removeprefix("did:key:"))
    assert ":" not in a.home and Path(a.home, "keys", "node.key").exists()
    assert [a.name, b.name, c.name] == ["par-newborn-1", "par-trained-1", "par-newborn-2"]
    assert not [n for n in entries(spawn_parent.home.parent) if n.startswith(".spawn-")]  # no temp dir left
    rows = spawn_parent.rows("SELECT did, kind, depth, state, home FROM children ORDER BY created_ms, name")
    assert {(d, k, dep, s, h) for d, k, dep, s, h in rows} == {
        (x.did, x.kind, 1, "active", x.home) for x in (a, b, c)}


def test_a_home_too_deep_for_the_control_socket_is_refused_before_anything_is_made(root, fake_seed):
    deep = root / ("d" * 40)
    parent = Parent(deep / "par", {})
    before = entries(deep)
    err = refused("home_too_deep", parent.spawn, "newborn")
    assert "--home" in err.reason
    assert entries(deep) == before
    ok = parent.spawn("newborn", home=root / "kid")  # a shorter --home works
    assert Path(ok.home) == root / "kid"


def test_an_existing_home_is_refused_and_left_alone(spawn_parent, root):
    taken = root / "taken"
    taken.mkdir()
    (taken / "mine.txt").write_text("keep")
    refused("home_exists", spawn_parent.spawn, "newborn", home=taken)
    assert entries(taken) == {"mine.txt"} and spawn_parent.rows("SELECT * FROM children") == []
    empty = root / "empty"
    empty.mkdir()
    refused("home_exists", spawn_parent.spawn, "newborn", home=empty)
    assert entries(empty) == set()


def test_max_children_refuses_before_anything_is_written(root, fake_seed):
    parent = Parent(root / "par", {"MESHNODE_SPAWN_MAX_CHILDREN": "1"})
    parent.spawn("newborn")
    before = entries(root)
    err = refused("too_many_children", parent.spawn, "clone")
    assert "max_children" in err.reason
    assert entries(root) == before and len(parent.rows("SELECT did FROM children")) == 1
    assert len(fake_seed.calls) == 1


def test_max_depth_refuses_a_child_beyond_the_last_generation(root, fake_seed):
    parent = Parent(root / "par", {"MESHNODE_SPAWN_MAX_DEPTH": "2"})
    db = Database(parent.config.db_path)
    try:  # this parent is itself a grandchild (depth 2)
        db.conn.execute("INSERT INTO spawn_origin (id, parent_did, parent_name, kind, depth, created_ms)"
                        " VALUES (1, 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK', 'gp', 'clone', 2, 0)")
    finally:
        db.close()
    before = entries(root)
    refused("too_deep", parent.spawn, "newborn")
    assert entries(root) == before and fake_seed.calls == []


def test_a_parent_that_never_ran_has_no_address_to_give(root, fake_seed):
    parent = Parent(root / "par", {})
    parent.rows("DELETE FROM main_process")  # as right after `meshnode init`
    before = entries(root)
    refused("parent_never_ran", parent.spawn, "newborn")
    assert entries(root) == before


def test_a_failing_later_step_leaves_no_home_and_no_rows(spawn_parent, monkeypatch):
    def broken(home, did, name, kind):
        raise SpawnError("start_failed", "the autostart could not be written (test)")

    monkeypatch.setattr(autostart, "install", broken)
    before = entries(spawn_parent.home.parent)
    refused("start_failed", spawn_parent.spawn, "newborn")
    assert entries(spawn_parent.home.parent) == before  # no CCORE-*, no .spawn-* temp dir
    assert spawn_parent.rows("SELECT * FROM children") == []
    assert spawn_parent.rows("SELECT id FROM agent_peers") == []


def test_bad_kind_and_autostart_are_typed(spawn_parent):
    refused("bad_kind", spawn_parent.spawn, "twin")
    refused("bad_autostart", spawn_parent.spawn, "newborn", autostart="cron")


@pytest.mark.parametrize("env, setting", [({"MESHNODE_SPAWN_MAX_DEPTH": "0"}, "spawn.max_depth"),
                                          ({"MESHNODE_SPAWN_AUTOSTART": "cron"}, "spawn.autostart"),
                                          ({"MESHNODE_SPAWN_WAIT_SECONDS": "0.5"}, "spawn.wait_seconds"),
                                          ({"MESHNODE_SPAWN_INVITATION_HOURS": "200"}, "spawn.invitation_hours"),
                                          ({"MESHNODE_SPAWN_MAX_CHILDREN": "1001"}, "spawn.max_children")])
def test_spawn_settings_are_checked_at_load(tmp_path, env, setting):
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path, environ=env)
    assert setting in err.value.reason


def test_default_name_fits_64_characters():
    assert service.default_name("p" * 64, "newborn", set()) == "p" * 54 + "-newborn-1"
    assert len(service.default_name("p" * 64, "newborn", {"p" * 54 + "-newborn-1"})) == 64


async def test_a_spawn_longer_than_one_control_request_is_answered_pending_then_by_spawn_wait():
    import threading

    from meshnode.base.errors import MeshnodeError
    from meshnode.engines.spawn.jobs import SpawnJobs

    jobs, go = SpawnJobs(), threading.Event()

    def slow() -> dict:
        if not go.wait(timeout=30):
            raise AssertionError("never released")
        return {"did": "did:key:child"}

    first = await jobs.run(slow, wait_seconds=0.05)
    assert set(first) == {"pending"}
    assert await jobs.wait(first["pending"], wait_seconds=0.05) == first  # still running
    go.set()
    assert await jobs.wait(first["pending"], wait_seconds=30) == {"did": "did:key:child"}
    with pytest.raises(MeshnodeError) as err:  # told once, then forgotten
        await jobs.wait(first["pending"])
    assert err.value.code == "not_found"

    def refused_spawn() -> dict:
        raise SpawnError("too_deep", "test")

    with pytest.raises(SpawnError) as err:
        await jobs.run(refused_spawn, wait_seconds=30)
    assert err.value.code == "too_deep"
    with pytest.raises(MeshnodeError) as err:  # a bug is an internal error, not a crashed node
        await jobs.run(lambda: 1 / 0, wait_seconds=30)
    assert err.value.code == "internal_error"


def test_cli_refusal_is_one_line_with_its_code_and_exit_1(run_cli, home, root):
    result = run_cli("--home", home, "spawn", "--kind", "newborn")  # pytest's temporary path is too long
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith("meshnode: spawn refused (home_too_deep): the child's control socket"
                                    f" {home.parent}/CCORE-<DID>/data/control.sock would be ")
    result = run_cli("--home", home, "spawn", "--kind", "newborn", "--home", root / "kid")  # `init` only: never ran
    assert result.returncode == 1 and result.stderr.startswith("meshnode: spawn refused (parent_never_ran): ")
    assert list(root.iterdir()) == [] and [p.name for p in home.parent.iterdir()] == ["node"]


def test_cli_human_output_names_what_a_person_needs(spawn_parent):
    from meshnode.faces.cli.spawn import result_lines

    r = spawn_parent.spawn("newborn").to_dict()
    text = "\n".join(result_lines(r))
    for expected in (f"did:        {r['did']}", "kind:       newborn (depth 1)", f"home:       {r['home']}",
                     f"listen:     {r['listen'][0]}", f"web:        {r['web_listen']}",
                     f"bootstrap:  {r['bootstrap'][0]}", "seed:       1 copied in 1 tables/classes, 0 refused",
                     "autostart:  none", "started:    no (start it: meshnode --home"):
        assert expected in text, (expected, text)


def test_the_childs_key_is_encrypted_when_the_passphrase_variable_is_set(spawn_parent, monkeypatch):
    from meshnode.base.identity.keyfile import PASSPHRASE_ENV, key_file_is_encrypted, load_key_file

    plain = spawn_parent.spawn("newborn")
    assert not key_file_is_encrypted(Path(plain.home, "keys", "node.key"))
    monkeypatch.setenv(PASSPHRASE_ENV, "a long test passphrase")
    locked = spawn_parent.spawn("newborn")
    key_file = Path(locked.home, "keys", "node.key")
    assert key_file_is_encrypted(key_file) and (key_file.stat().st_mode & 0o777) == 0o600
    assert load_key_file(key_file, "a long test passphrase").did == locked.did


def test_two_spawns_at_once_respect_max_children_and_get_distinct_names(root, monkeypatch):
    import threading
    import time

    from meshnode.engines.spawn import seed
    from spawnlab import FakeSeed

    fake = FakeSeed()

    def slow(*args, **kwargs):
        time.sleep(0.3)  # both spawns are past their checks before either records its child
        return fake(*args, **kwargs)

    monkeypatch.setattr(seed, "seed_child_store", slow)
    parent = Parent(root / "par", {"MESHNODE_SPAWN_MAX_CHILDREN": "2"})
    parent.spawn("newborn")
    outcomes: list = []

    def one() -> None:
        try:
            outcomes.append(parent.spawn("newborn").name)
        except SpawnError as exc:
            outcomes.append(exc.code)

    threads = [threading.Thread(target=one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["par-newborn-2", "too_many_children"]
    assert len(parent.rows("SELECT did FROM children WHERE state = 'active'")) == 2


def test_a_spawn_failing_after_the_node_stopped_still_undoes_its_home_and_rows(spawn_parent, monkeypatch):
    """The node's spawn job runs on a worker thread that outlives the node's main task: once the
    node stopped, every call back into its loop raises trio.Cancelled (a BaseException)."""
    import threading
    import time

    import trio

    from meshnode.engines.spawn.model import SpawnRequest
    from meshnode.engines.spawn.parent import LocalParent

    main_done = threading.Event()

    class StoppingParent(LocalParent):
        running = True

        def write(self, fn):
            async def on_loop():  # as Store.write: it waits its turn (a checkpoint)
                await trio.sleep(0)
                return fn(self.db)
            return trio.from_thread.run(on_loop)

        def read(self, fn):
            return self.write(fn)

    def install_after_stop(home, did, name, kind):
        main_done.wait(10)
        time.sleep(0.2)  # the node's main task has returned
        raise SpawnError("start_failed", "the autostart could not be written (test)")

    monkeypatch.setattr(autostart, "install", install_after_stop)
    before = entries(spawn_parent.home.parent)
    parent = LocalParent.__new__(StoppingParent)
    LocalParent.__init__(parent, spawn_parent.config, spawn_parent.key)
    outcome: list = []

    def work():
        try:
            service.spawn_child(spawn_parent.config, spawn_parent.key, SpawnRequest(kind="newborn"), parent)
        except BaseException as exc:
            outcome.append(exc)

    async def job():
        await trio.to_thread.run_sync(work)

    async def node():
        trio.lowlevel.spawn_system_task(job)
        await trio.sleep(0.5)
        main_done.set()

    try:
        trio.run(node)
    finally:
        parent.close()
    assert outcome and isinstance(outcome[0], SpawnError), outcome
    assert entries(spawn_parent.home.parent) == before  # no CCORE-* left behind
    assert spawn_parent.rows("SELECT * FROM children") == []
    assert spawn_parent.rows("SELECT id FROM agent_peers") == []


def test_an_undone_spawn_disables_the_unit_it_enabled(spawn_parent, root, monkeypatch):
    """Where systemd runs, install enabled the unit: removing its file alone leaves the enabled link."""
    from meshnode.base.errors import MeshnodeError
    from meshnode.engines.spawn import launch

    monkeypatch.setenv("XDG_CONFIG_HOME", str(root / "cfg"))
    calls = []
    monkeypatch.setattr(autostart, "systemd_usable", lambda *, system: True)
    monkeypatch.setattr(autostart, "systemctl", lambda system, *args: calls.append(args) or "")

    def no_start(home, kind):
        raise MeshnodeError("start_failed", "systemctl start failed (test)")

    monkeypatch.setattr(launch, "launch", no_start)
    refused("start_failed", spawn_parent.spawn, "newborn", autostart="systemd-user", start=True)
    unit = calls[1][1]
    assert calls[:2] == [("daemon-reload",), ("enable", unit)]
    assert ("disable", unit) in calls[2:]
    assert not (root / "cfg" / "systemd" / "user" / unit).exists()
    assert spawn_parent.rows("SELECT * FROM children") == []


def test_a_parent_serving_its_web_over_tls_with_relative_paths_can_spawn(root, fake_seed):
    """Relative paths are relative to the home: the parent's tls files are not in the child's."""
    (root / "par" / "tls").mkdir(parents=True)
    for name in ("cert.pem", "key.pem"):
        (root / "par" / "tls" / name).write_text("test\n")
    parent = Parent(root / "par", {"MESHNODE_WEB_TLS_CERT": "tls/cert.pem", "MESHNODE_WEB_TLS_KEY": "tls/key.pem"})
    r = parent.spawn("newborn")
    child = load_config(Path(r.home), environ={})
    assert child.path("web", "tls_cert") == parent.home / "tls" / "cert.pem"


def test_a_child_started_by_its_script_that_exits_at_once_fails_the_start_quickly(spawn_parent, monkeypatch):
    """Not a full wait ending in "not reachable ... left running" for a process that is gone."""
    import subprocess

    from meshnode.engines.spawn import launch

    def script_start(home, kind):
        proc = subprocess.Popen(["sh", "-c", "exit 3"], start_new_session=True)
        return {"via": "script", "pid": proc.pid, "log": str(home / "logs" / "node.log")}

    seen = []  # what each poll learnt of the process
    exited = launch.exited
    monkeypatch.setattr(launch, "launch", script_start)
    monkeypatch.setattr(launch, "exited", lambda pid: seen.append(exited(pid)) or seen[-1])
    before = entries(spawn_parent.home.parent)
    err = refused("start_failed", spawn_parent.spawn, "newborn", autostart="script", start=True, wait_seconds=20)
    assert "exited at start" in err.reason and seen[-1] and not any(seen[:-1])  # at the first poll that saw it
    assert entries(spawn_parent.home.parent) == before and spawn_parent.rows("SELECT * FROM children") == []


def test_flags_of_the_other_host_are_refused_with_a_bundle_and_expires_without_one(spawn_parent, root):
    for fields in ({"start": True}, {"home": root / "kid"}, {"autostart": "script"}):
        err = refused("bad_request", spawn_parent.spawn, "trained", bundle=root / "kid.tgz", **fields)
        assert "init --from-bundle" in err.reason
    refused("bad_request", spawn_parent.spawn, "trained", expires_hours=2.0)
    assert not (root / "kid.tgz").exists() and spawn_parent.rows("SELECT * FROM children") == []


def test_open_bundle_invitations_count_against_max_children(root, fake_seed):
    parent = Parent(root / "par", {"MESHNODE_SPAWN_MAX_CHILDREN": "2"})
    db = Database(parent.config.db_path)
    try:  # one bundle out and not used yet, one used, one expired: only the first may still bring a child
        for inv, used, expires in (("a" * 32, None, 2**62), ("b" * 32, "did:key:z6Mkx", 2**62), ("c" * 32, None, 1)):
            db.conn.execute("INSERT INTO spawn_invitations (id, container, kind, name, depth, bundle_hash, created_ms,"
                            " expires_ms, used_by_did) VALUES (?, 'x', 'trained', 'far', 1, 'h', 0, ?, ?)",
                            (inv, expires, used))
    finally:
        db.close()
    parent.spawn("newborn")
    err = refused("too_many_children", parent.spawn, "newborn")
    assert "1 open bundle invitation" in err.reason
