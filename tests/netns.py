"""Test hosts in network namespaces: a hub with a bridge, and one namespace per node.

Everything is created by the test and removed afterwards; addresses exist only
inside these namespaces (10.231.0.0/16), so no packet leaves the machine.
Needs root and iproute2; ``available()`` says why not otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess

SUBNET = "10.231"


def available() -> str | None:
    """None when namespaces can be made here, else the reason they cannot."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2 (`ip`) is not installed"
    probe = f"mnprobe{os.getpid() % 100000}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"cannot create a network namespace: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _ip(*args: str, ns: str | None = None) -> None:
    cmd = ["ip", "netns", "exec", ns, "ip", *args] if ns else ["ip", *args]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {result.stderr.strip()}")


class Lab:
    """``Lab(n)``: n host namespaces on one bridge. ``cut(i)``/``heal(i)`` take host i's link down/up;
    ``partition(group)``/``join()`` split the hosts into two groups and back."""

    def __init__(self, hosts: int):
        tag = f"{os.getpid() % 10000}"
        self.hub = f"mnhub{tag}"
        self.hosts = [f"mnh{i}x{tag}" for i in range(hosts)]
        self.addresses = [f"{SUBNET}.{int(tag) % 250}.{i + 10}" for i in range(hosts)]
        self._hub_links = [f"mv{i}h{tag}" for i in range(hosts)]
        self._made: list[str] = []
        self._second_bridge = False
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    def _build(self) -> None:
        for ns in [self.hub, *self.hosts]:
            _ip("netns", "add", ns)
            self._made.append(ns)
            _ip("link", "set", "lo", "up", ns=ns)
        _ip("link", "add", "br0", "type", "bridge", ns=self.hub)
        _ip("link", "set", "br0", "up", ns=self.hub)
        for i, ns in enumerate(self.hosts):
            inside, hub_side = f"mv{i}n{self.hub[5:]}", self._hub_links[i]
            _ip("link", "add", inside, "type", "veth", "peer", "name", hub_side)
            _ip("link", "set", inside, "netns", ns)
            _ip("link", "set", hub_side, "netns", self.hub)
            _ip("link", "set", hub_side, "master", "br0", ns=self.hub)
            _ip("link", "set", hub_side, "up", ns=self.hub)
            _ip("addr", "add", f"{self.addresses[i]}/16", "dev", inside, ns=ns)
            _ip("link", "set", inside, "up", ns=ns)

    def wrapper(self, i: int) -> list[str]:
        """The command prefix that runs a process on host i."""
        return ["ip", "netns", "exec", self.hosts[i]]

    def cut(self, i: int) -> None:
        _ip("link", "set", self._hub_links[i], "down", ns=self.hub)

    def heal(self, i: int) -> None:
        _ip("link", "set", self._hub_links[i], "up", ns=self.hub)

    def partition(self, group: list[int]) -> None:
        """Move ``group``'s hosts to a bridge of their own: they reach each other, not the rest."""
        if not self._second_bridge:
            _ip("link", "add", "br1", "type", "bridge", ns=self.hub)
            _ip("link", "set", "br1", "up", ns=self.hub)
            self._second_bridge = True
        for i in group:
            _ip("link", "set", self._hub_links[i], "master", "br1", ns=self.hub)

    def join(self) -> None:
        """Undo ``partition``: every host on the one bridge again."""
        for link in self._hub_links:
            _ip("link", "set", link, "master", "br0", ns=self.hub)

    def close(self) -> None:
        for ns in reversed(self._made):  # deleting a namespace deletes its links too
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self._made.clear()
