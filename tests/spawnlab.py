"""Helpers for spawn tests: short temporary roots, `meshnode spawn --json`, children started and
stopped again.

A unix socket path is at most 104 bytes and a child's home is ``CCORE-<48-character DID>`` beside
its parent's: pytest's own temporary paths are too long, so spawn tests use a short root under
/tmp (``short_root``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from meshharness import wait_until


@contextlib.contextmanager
def short_root():
    """A fresh folder /tmp/spXXXXXX (short, so sockets of homes inside it fit), removed after."""
    root = Path(tempfile.mkdtemp(prefix="sp", dir="/tmp"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def root():
    with short_root() as path:
        yield path


def spawn_json(node_or_home, *args: str, env: dict[str, str] | None = None, timeout: float = 120) -> dict:
    """``meshnode --home H spawn ARGS --json`` as the parent's user runs it; its parsed output
    (exit 0 asserted). ``node_or_home``: a meshharness Node (its home and environment) or a home path."""
    home = getattr(node_or_home, "home", node_or_home)
    base = getattr(node_or_home, "env", None) or {k: v for k, v in os.environ.items() if not k.startswith("MESHNODE_")}
    result = subprocess.run([sys.executable, "-m", "meshnode", "--home", str(home), "spawn", *args, "--json"],
                            env={**base, **(env or {})}, capture_output=True, text=True, timeout=timeout,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 0, f"spawn failed ({result.returncode}): {result.stderr}"
    return json.loads(result.stdout)


def reaches(parent, child_did: str) -> bool:
    """The running parent's ping to the child answers."""
    return parent.try_call("ping", {"did": child_did}, timeout=20) is not None


def wait_child_running(parent, child_did: str, timeout: float = 30.0) -> None:
    """Until the running parent reaches the child (its ping answers)."""
    wait_until(lambda: reaches(parent, child_did), timeout, f"the parent reaching its child {child_did}", interval=0.5)


def stop_child(home: Path) -> None:
    """Stop a launched child by its pid file (launch.stop), whatever way it was started."""
    from meshnode.engines.spawn import launch

    for autostart in ("none", "script"):
        if launch.running_pid(Path(home)) is None:
            return
        launch.stop(Path(home), autostart)


@pytest.fixture
def children_cleanup():
    """A list of child homes: every child started from them is stopped after the test."""
    homes: list[Path] = []
    yield homes
    for home in homes:
        stop_child(home)


class FakeSeed:
    """Stands in for seed.seed_child_store in tests of the steps around it (what it was asked is kept)."""

    def __init__(self):
        self.calls: list[dict] = []

    def __call__(self, source, child, kind, *, parent_did, now_ms):
        self.calls.append({"source": source, "child": child.path, "kind": kind, "parent_did": parent_did})
        return _Report({"kind": kind, "copied": {"fake": 1}, "refused": {}, "reasons": []})


class _Report:
    def __init__(self, d: dict):
        self.d = d

    def to_dict(self) -> dict:
        return self.d


class Parent:
    """A stopped parent home (it has run once, so it has an address) and spawn_child on it in-process."""

    def __init__(self, home: Path, env: dict[str, str]):
        from meshnode.base.config import load_config
        from meshnode.store.home import init_home
        from meshnode.node.run import _heartbeat
        from meshnode.engines.spawn.ports import free_port
        from meshnode.store.database import Database

        init_home(home, name="par", passphrase=None, exist_ok=False)
        self.listen_port, self.web_port = free_port("127.0.0.1"), None
        self.web_port = free_port("127.0.0.1", {self.listen_port})
        self.env = {"MESHNODE_NET_LISTEN": f"/ip4/127.0.0.1/tcp/{self.listen_port}",
                    "MESHNODE_WEB_LISTEN": f"127.0.0.1:{self.web_port}", **env}
        self.config = load_config(home, environ=self.env)
        from meshnode.store.home import open_identity

        self.key = open_identity(self.config)
        self.home = home
        db = Database(self.config.db_path)
        try:
            _heartbeat(db, "node", "stopped")  # as a node that ran once leaves it
        finally:
            db.close()

    def ports(self) -> set[int]:
        return {self.listen_port, self.web_port}

    def spawn(self, kind: str, **fields):
        from meshnode.engines.spawn.model import SpawnRequest
        from meshnode.engines.spawn.parent import LocalParent
        from meshnode.engines.spawn.service import spawn_child

        parent = LocalParent(self.config, self.key)
        try:
            return spawn_child(self.config, self.key, SpawnRequest(kind=kind, **fields), parent)
        finally:
            parent.close()

    def rows(self, sql: str, *params) -> list[tuple]:
        from meshnode.store.database import Database

        db = Database(self.config.db_path, create=False)
        try:
            return db.conn.execute(sql, params).fetchall()
        finally:
            db.close()


@pytest.fixture
def fake_seed(monkeypatch) -> FakeSeed:
    from meshnode.engines.spawn import seed

    fake = FakeSeed()
    monkeypatch.setattr(seed, "seed_child_store", fake)
    return fake


@pytest.fixture
def spawn_parent(root, fake_seed) -> Parent:
    """A stopped parent in a short root, fast timers set by its environment (decision 2), seeding faked."""
    return Parent(root / "par", {"MESHNODE_NET_HEARTBEAT_SECONDS": "0.5"})
