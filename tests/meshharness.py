"""Real meshnode processes for multi-node tests: start, ask over the control channel, stop.

Each node is ``python -m meshnode run`` in its own home, configured through its
environment and its bootstrap.txt only. Output is read on a thread so a test
can wait for a line with a deadline; conditions across nodes are awaited with
``wait_until`` (a deadline and a short poll of the nodes' own answers).
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from meshnode import control
from meshnode.control import ControlError

FAST_NET = {
    "MESHNODE_NET_HEARTBEAT_SECONDS": "0.5",
    "MESHNODE_NET_QUIET_AFTER_SECONDS": "1.5",
    "MESHNODE_NET_STALE_AFTER_SECONDS": "3",
    "MESHNODE_NET_DEAD_AFTER_SECONDS": "30",
    "MESHNODE_NET_SYNC_SECONDS": "2",
}


class Node:
    def __init__(self, root: Path, name: str, env: dict[str, str] | None = None, wrapper: list[str] | None = None):
        self.name = name
        self.home = root / name
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("MESHNODE_")}
        self.env.update({"HOME": str(root), "MESHNODE_NET_LISTEN": "/ip4/127.0.0.1/tcp/0", **FAST_NET, **(env or {})})
        self.wrapper = wrapper or []
        self.proc: subprocess.Popen | None = None
        self.lines: queue.Queue = queue.Queue()
        self.output: list[str] = []
        self.peer_id = None
        self.addresses: list[str] = []
        result = subprocess.run([*self.wrapper, sys.executable, "-m", "meshnode", "--home", str(self.home), "init",
                                 "--name", name], env=self.env, capture_output=True, text=True, timeout=60,
                                stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            raise RuntimeError(f"init {name} failed: {result.stderr}")
        self.did = next(line.split()[1] for line in result.stdout.splitlines() if line.startswith("did:"))

    def cli(self, *args: str) -> str:
        """Run ``meshnode --home <this node's home> ARGS`` as its user would; its output (exit 0 asserted)."""
        result = subprocess.run([*self.wrapper, sys.executable, "-m", "meshnode", "--home", str(self.home), *args],
                                env=self.env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert result.returncode == 0, result.stderr
        return result.stdout

    def set_bootstrap(self, *others: "Node", address_filter: str = "") -> None:
        lines = [a for o in others for a in o.addresses if address_filter in a]
        (self.home / "bootstrap.txt").write_text("\n".join(lines) + "\n")

    def start(self, timeout: float = 30.0) -> None:
        self.lines = queue.Queue()  # a fresh queue per run: a restarted node starts clean
        self.proc = subprocess.Popen([*self.wrapper, sys.executable, "-m", "meshnode", "--home", str(self.home), "run"],
                                     env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, encoding="utf-8")
        threading.Thread(target=self._pump, args=(self.proc, self.lines), daemon=True).start()
        self.addresses = []
        deadline = time.monotonic() + timeout
        while True:
            line = self._next_line(deadline)
            if line.startswith("did:"):
                self.did = line.split()[1]
            elif line.startswith("peer id:"):
                self.peer_id = line.split()[2]
            elif line.startswith("listen:"):
                self.addresses.append(line.split()[1])
            elif line.startswith("ready"):
                return

    @staticmethod
    def _pump(proc, lines) -> None:
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    def _next_line(self, deadline: float) -> str:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"{self.name}: no 'ready' in time; output: {self.output[-20:]}")
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"{self.name} exited early: {self.output[-30:]}")
            self.output.append(line)
            return line

    def drain(self, timeout: float = 10.0) -> list[str]:
        """Everything the process printed, once it has exited."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            self.output.append(line)
        return self.output

    def call(self, cmd: str, args: dict | None = None, timeout: float = 30.0):
        return control.call(self.home / "data" / "control.sock", cmd, args, timeout=timeout)

    def try_call(self, cmd: str, args: dict | None = None, timeout: float = 10.0):
        try:
            return self.call(cmd, args, timeout)
        except ControlError:
            return None

    def stop(self, timeout: float = 10.0) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout=10)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


@contextlib.contextmanager
def plain_peer(node: Node):
    """A plain libp2p peer (tests/plain_peer.py: no meshnode protocols) connected to ``node``
    while the block runs; yields its peer id."""
    address = next(a for a in node.addresses if "/ip4/127.0.0.1/" in a)
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("plain_peer.py")), address],
                            env=node.env, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        said = proc.stdout.readline().split()
        assert said[:1] == ["connected"], proc.stderr.read()[-2000:]
        yield said[1]  # its peer id
    finally:
        proc.stdin.close()  # it leaves when its stdin closes
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def metric(node: Node, name: str, **labels) -> int:
    """The sum of a node's metric ``name`` over the series whose labels include ``labels``."""
    return sum(m["value"] for m in node.call("metrics")
               if m["name"] == name and all(m["labels"].get(k) == v for k, v in labels.items()))


def wait_until(predicate, timeout: float, what: str, interval: float = 0.2):
    """Poll ``predicate`` (the nodes' own answers) until it returns a truthy value or time runs out."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)  # a poll interval between questions, not a guess that something happened
    raise AssertionError(f"timed out after {timeout} s waiting for {what}; last answer: {last!r}")


@contextlib.contextmanager
def nodes_on_hosts(count: int, root: Path, prepare=None):
    """A ``netns.Lab`` of ``count`` hosts with a started node on each (``start_on_hosts``);
    yields (lab, nodes), and kills the nodes and removes the namespaces afterwards."""
    import netns

    lab = netns.Lab(count)
    nodes: list[Node] = []
    try:
        nodes = start_on_hosts(lab, root, prepare)
        yield lab, nodes
    except BaseException:
        for node in nodes:  # what each node knew and said, for the failure's report
            print(f"--- {node.name} ({node.did}) peers: {node.try_call('peers')}")
            print(f"status: {node.try_call('status')}")
            print("\n".join(node.drain(timeout=0.5)[-40:]))
        raise
    finally:
        for node in nodes:
            node.kill()
        lab.close()


def start_on_hosts(lab, root: Path, prepare=None) -> list[Node]:
    """One node per host of a ``netns.Lab``, listening on the host's address; the first is
    everyone's bootstrap. ``prepare(nodes)`` may change their environment before they start.
    Returns them started; the caller stops or kills them."""
    nodes: list[Node] = []
    try:
        for i, address in enumerate(lab.addresses):
            nodes.append(Node(root, f"h{i}", env={"MESHNODE_NET_LISTEN": f"/ip4/{address}/tcp/4001"},
                              wrapper=lab.wrapper(i)))
        if prepare is not None:
            prepare(nodes)
        nodes[0].start()
        for node in nodes[1:]:
            node.set_bootstrap(nodes[0], address_filter=lab.addresses[0])
            node.start()
    except BaseException:
        for node in nodes:
            node.kill()
        raise
    return nodes
