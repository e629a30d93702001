"""Spawn with real processes: a child started from a running parent, and from a stopped one, runs,
and its parent reaches it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from meshharness import Node, metric, wait_until
from meshnode.net import control
from meshnode.net.control import ControlError
from meshnode.engines.spawn import launch
from meshnode.engines.spawn.ports import free_port
from spawnlab import children_cleanup, reaches, root, spawn_json, wait_child_running  # noqa: F401 (fixtures)


def child_status(home: Path) -> dict:
    return control.call(Path(home) / "data" / "control.sock", "status", timeout=10)


def test_newborn_from_a_running_parent_runs_and_is_reached(root, children_cleanup):
    parent = Node(root, "par")
    parent.start()
    try:
        r = spawn_json(parent, "--kind", "newborn", "--start")
        children_cleanup.append(Path(r["home"]))
        assert r["started"] is True and r["reachable_seconds"] is not None
        assert r["kind"] == "newborn" and r["depth"] == 1 and Path(r["home"]).parent == root
        assert launch.running_pid(Path(r["home"])) is not None
        status = child_status(r["home"])
        assert status["did"] == r["did"] and status["name"] == "par-newborn-1"
        assert any(p["did"] == r["did"] for p in parent.call("peers"))  # the parent knows its child
        assert reaches(parent, r["did"])
        # the parent's test timers reached the child through its config, not its environment
        assert "MESHNODE_NET_HEARTBEAT_SECONDS" not in launch.child_env(parent.env)
        assert "heartbeat_seconds = 0.5" in (Path(r["home"]) / "config.toml").read_text()
        for bad in ({"kind": 5}, {"kind": "newborn", "answer_seconds": "soon"}):  # checked at the edge
            with pytest.raises(ControlError) as err:
                parent.call("spawn", bad)
            assert err.value.code == "bad_request"
        with pytest.raises(ControlError) as err:
            parent.call("spawn", {"kind": "twin"})
        assert err.value.code == "bad_kind"
        assert metric(parent, "spawned", kind="newborn") == 1 and metric(parent, "spawn_refused", code="bad_kind") == 1
        stopped_is_reaped_then_removed_is_gone(parent, r["did"], Path(r["home"]))
    finally:
        parent.stop()


def stopped_is_reaped_then_removed_is_gone(parent, did: str, home: Path) -> None:
    """Issue 35 (7): the running parent started the child, so only it can reap it: `children stop`
    (another process) leaves no zombie, the list says how it ended; once removed, the child is not
    in `peers` and its liveness is no longer shown."""
    pid = launch.running_pid(home)
    assert "stopped" in parent.cli("children", "stop", did)
    wait_until(lambda: state_of(pid) is None and launch.process_state(home)["exit"] is not None
               and "code" in launch.process_state(home)["exit"], 30, "the parent reaping its stopped child")
    [row] = json.loads(parent.cli("children", "list", "--json"))
    assert row["process"]["running"] is False and row["process"]["exit"]["code"] == 0
    assert "stopped (exit 0)" in parent.cli("children", "list")
    # started again from the command line: by the running parent, which waits on it and records its
    # exit (started by the CLI process itself, the child was init's once that exited: nobody knew how it ended)
    started = subprocess.run([sys.executable, "-m", "meshnode", "--home", str(parent.home), "children", "start", did],
                             env=parent.env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert "started" in started.stdout, started.stderr
    pid = launch.running_pid(home)
    assert pid is not None and "stopped" in parent.cli("children", "stop", did)
    wait_until(lambda: state_of(pid) is None and (launch.process_state(home)["exit"] or {}).get("pid") == pid, 30,
               "the parent reaping the child `children start` started, and recording how it ended")
    # exit 0, or SIGTERM when the stop came before the child's handler was in place
    assert re.search(r"stopped \((exit 0|SIGTERM)\)", parent.cli("children", "list"))
    parent.cli("children", "remove", did)
    row = next((p for p in parent.call("peers") if p["did"] == did), None)
    # gone; or, when the parent rated the child meanwhile (a container of it heard: `children start` now
    # returns once the child holds its home, so it often lives long enough), kept for its reputation
    # history as family.mark_removed says, its liveness no longer shown
    assert row is None or row["liveness"] is None and row["last_heard_ms"] is None, row
    [row] = json.loads(parent.cli("children", "list", "--all", "--json"))
    assert row["state"] == "removed" and row["liveness"] == "-" and row["last_heard_ms"] is None


def state_of(pid: int) -> str | None:
    """The process's state letter in /proc (Z: a zombie), None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return None


def test_trained_from_a_stopped_parent_runs_and_the_parent_reaches_it_once_started(root, children_cleanup):
    port = free_port("127.0.0.1")  # a stopped parent's address is its fixed listen port
    parent = Node(root, "par", env={"MESHNODE_NET_LISTEN": f"/ip4/127.0.0.1/tcp/{port}"})
    parent.start()
    parent.cli("note", "add", "for the family", "--audience", "public")
    parent.stop()
    r = spawn_json(parent, "--kind", "trained", "--start")
    children_cleanup.append(Path(r["home"]))
    assert r["started"] is True and child_status(r["home"])["did"] == r["did"]
    assert r["bootstrap"] == [f"/ip4/127.0.0.1/tcp/{port}/p2p/{parent.peer_id}"]
    parent.start()
    try:
        wait_child_running(parent, r["did"], timeout=60)
    finally:
        parent.stop()


def test_each_kind_syncs_what_it_allows(root, children_cleanup):
    """After birth a child is a friend of its parent and syncs with it: a trained child takes the
    parent's new diary entries, a newborn does not (its [sync] classes leave knowledge out), and
    neither ever gets a private note."""
    from meshharness import wait_until

    parent = Node(root, "par")
    parent.start()
    try:
        trained = spawn_json(parent, "--kind", "trained", "--start")
        children_cleanup.append(Path(trained["home"]))
        newborn = spawn_json(parent, "--kind", "newborn", "--start")
        children_cleanup.append(Path(newborn["home"]))
        assert "diary_entry" not in _sync_classes(newborn["home"]) and _sync_classes(trained["home"]) == []
        parent.call("diary_add", {"text": "what the parent learnt after the births"})
        parent.call("note_add", {"text": "a secret for the person", "audience": "private"})
        parent.call("note_add", {"text": "news for everyone", "audience": "public"})

        def texts(home: str, cmd: str, field: str) -> list[str]:
            return [r[field] for r in control.call(Path(home) / "data" / "control.sock", cmd, timeout=10)]

        for child in (trained, newborn):  # the public note came with a sync after the diary entry was written
            wait_until(lambda: "news for everyone" in texts(child["home"], "notes", "text"), 60,
                       f"the {child['kind']} child syncing the public note")
        wait_until(lambda: "what the parent learnt after the births" in texts(trained["home"], "diary", "text"), 60,
                   "the trained child syncing the diary entry")
        assert texts(newborn["home"], "diary", "text") == []
        for child in (trained, newborn):
            assert "a secret for the person" not in texts(child["home"], "notes", "text")
    finally:
        parent.stop()


def _sync_classes(home: str) -> list[str]:
    import tomllib

    return tomllib.loads((Path(home) / "config.toml").read_text())["sync"]["classes"]


def test_a_parent_restarted_elsewhere_finds_its_children(root, children_cleanup):
    """The child's bootstrap names the parent's old port; the parent, back on a new one, dials its
    children itself (spawn/keeper.py), so the family stays in touch and the child's liveness ok."""
    from meshharness import wait_until

    parent = Node(root, "par")
    parent.start()
    try:
        r = spawn_json(parent, "--kind", "newborn", "--start")
        children_cleanup.append(Path(r["home"]))
    finally:
        parent.stop()
    old = set(parent.addresses)
    parent.start()  # port 0 again: another port, which the child's bootstrap.txt does not name
    try:
        assert not old & set(parent.addresses)

        def connected() -> bool:
            return any(p["did"] == r["did"] and p["connected"] for p in parent.call("peers"))

        wait_until(connected, 30, "the restarted parent connected to its child")
        # liveness follows the heartbeats on that connection: read at one instant on a busy machine it
        # can be "quiet" between two of them, so wait for the child to be ok
        wait_until(lambda: parent.call("children")[0]["liveness"] == "ok", 30, "the child ok at its parent")
        assert metric(parent, "family_dialed") >= 1
    finally:
        parent.stop()


def test_a_running_child_stays_ok_and_its_last_heard_time_is_written_down(root, children_cleanup):
    """The liveness row changes only with the state: the running parent shows what its tracker heard
    (not a silence since the last change), and the keeper writes the last heard time down, so a
    stopped parent's `children list` is at most one period behind."""
    import sqlite3
    import time

    from meshharness import wait_until

    parent = Node(root, "par")
    parent.start()
    try:
        r = spawn_json(parent, "--kind", "newborn", "--start")
        children_cleanup.append(Path(r["home"]))
        born = time.time() * 1000

        heard: set[int] = set()

        def fresh_and_ok() -> bool:  # well past the quiet threshold (1.5 s) since the child was first heard
            row = parent.call("children")[0]
            heard.add(row["last_heard_ms"] or 0)
            return time.time() * 1000 - born > 4000 and row["liveness"] == "ok" and len(heard - {0}) >= 3

        # the last heard time shown moves on with the child's heartbeats (three different ones seen)
        # while the stored state stays ok: a row frozen at the last change would age to quiet
        wait_until(fresh_and_ok, 30, "the child ok 4 s after its start, its last heard time moving on")

        def written() -> int:
            db = sqlite3.connect(f"file:{parent.home / 'data' / 'meshnode.db'}?mode=ro", uri=True)
            try:
                row = db.execute("SELECT last_heard_ms FROM peer_liveness WHERE did = ?", (r["did"],)).fetchone()
            finally:
                db.close()
            return row[0] if row else 0

        wait_until(lambda: written() > born + 3000, 30, "the keeper writing down a later last heard time")
    finally:
        parent.stop()
