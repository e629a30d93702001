"""A child on another host, with real processes on two network namespaces: the parent on host 0
writes a bundle (`spawn --bundle`), host 1 makes a child from it (`init --from-bundle`) and runs
it; the child's hello makes it the parent's child. A second child from the same bundle (a new
key) and a child from an expired invitation are refused by the parent, and keep running."""

from __future__ import annotations

import json
import os
import queue
import socket
import sqlite3
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

import netns
from meshharness import Node, metric, report, wait_until
from meshnode.base.container.timefmt import parse_ms

pytestmark = pytest.mark.netns

REASON = netns.available()
DEADLINE = 60.0


class BundleChild(Node):
    """A node made by ``meshnode init --from-bundle`` on a lab host, run without any MESHNODE_*
    variable (as a person on that host would: everything comes from the bundle)."""

    def __init__(self, root: Path, name: str, bundle: Path, wrapper: list[str]):
        self.name, self.home, self.wrapper = name, root / name, wrapper
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("MESHNODE_")}
        self.env["HOME"] = str(root)
        self.proc, self.lines, self.output = None, queue.Queue(), []
        self.peer_id, self.addresses, self.web_url = None, [], None
        result = subprocess.run([*wrapper, sys.executable, "-m", "meshnode", "--home", str(self.home), "init",
                                 "--from-bundle", str(bundle)], env=self.env, capture_output=True, text=True,
                                timeout=120, stdin=subprocess.DEVNULL)
        assert result.returncode == 0, result.stderr
        self.did = next(line.split()[1] for line in result.stdout.splitlines() if line.startswith("did:"))

    def hello(self) -> tuple[str, str | None]:
        """(hello_state, hello_reason) from the child's own store."""
        conn = sqlite3.connect(f"file:{self.home / 'data' / 'meshnode.db'}?mode=ro", uri=True, timeout=5)
        try:
            return conn.execute("SELECT hello_state, hello_reason FROM spawn_origin").fetchone()
        finally:
            conn.close()


def spawn_bundle(parent: Node, path: Path, *extra: str) -> dict:
    return json.loads(parent.cli("spawn", "--kind", "trained", "--bundle", str(path), "--json", *extra))


def expires_ms(bundle: Path) -> int:
    with tarfile.open(bundle, "r:gz") as tar:
        return parse_ms(json.loads(tar.extractfile("meshnode-bundle.json").read())["expires"])


def children(parent: Node) -> list[dict]:
    return json.loads(parent.cli("children", "list", "--json"))


@pytest.mark.skipif(REASON is not None, reason=f"network namespaces unavailable: {REASON}")
def test_a_child_on_another_host_joins_once_and_not_after_expiry(tmp_path):
    lab = netns.Lab(2)
    nodes: list[Node] = []
    try:
        # skew 0: the parent refuses an expired invitation at once, not 5 minutes later
        parent = Node(tmp_path, "mum", env={"MESHNODE_NET_LISTEN": f"/ip4/{lab.addresses[0]}/tcp/4001",
                                            "MESHNODE_LIMITS_CLOCK_SKEW_SECONDS": "0"}, wrapper=lab.wrapper(0))
        nodes.append(parent)
        parent.start()
        made = spawn_bundle(parent, tmp_path / "kid.tgz")
        assert made["bundle"] == str(tmp_path / "kid.tgz") and made["invitation"]
        assert all(lab.addresses[0] in line for line in made["bootstrap"])

        kid = BundleChild(tmp_path, "kid", tmp_path / "kid.tgz", lab.wrapper(1))
        nodes.append(kid)
        assert kid.hello() == ("pending", None)
        kid.start()
        started = time.monotonic()
        row = wait_until(lambda: next((c for c in children(parent) if c["did"] == kid.did), None), DEADLINE,
                         "the parent to list the child from host 1")
        assert (row["host"], row["kind"], row["state"], row["depth"]) == (socket.gethostname(), "trained", "active", 1)
        wait_until(lambda: kid.hello() == ("accepted", None), DEADLINE, "the child to record its acceptance")
        print(f"the parent listed the child {time.monotonic() - started:.1f} s after it was ready")

        twin = BundleChild(tmp_path, "twin", tmp_path / "kid.tgz", lab.wrapper(1))  # the same bundle, a new key
        nodes.append(twin)
        twin.start()
        wait_until(lambda: twin.hello() == ("refused", "invitation_used"), DEADLINE, "the copy to be refused")
        assert metric(parent, "spawn_hello_refused", reason="invitation_used") >= 1
        assert twin.call("status")["did"] == twin.did  # still running, as a plain node
        assert [c["did"] for c in children(parent)] == [kid.did]

        spawn_bundle(parent, tmp_path / "late.tgz", "--expires", "0.0005")  # 1.8 s
        until = expires_ms(tmp_path / "late.tgz")
        wait_until(lambda: time.time() * 1000 > until, 10, "the invitation to expire")
        late = BundleChild(tmp_path, "late", tmp_path / "late.tgz", lab.wrapper(1))  # the target allows 5 min skew
        nodes.append(late)
        late.start()
        wait_until(lambda: late.hello() == ("refused", "invitation_expired"), DEADLINE, "the late child to be refused")
        assert metric(parent, "spawn_hello_refused", reason="invitation_expired") >= 1  # the parent said so
        assert [c["did"] for c in children(parent)] == [kid.did]
        assert metric(parent, "spawn_hello_accepted") >= 1
        for node in nodes:
            assert node.stop() == 0
    except BaseException:
        report(nodes)
        raise
    finally:
        for node in nodes:
            node.kill()
        lab.close()
