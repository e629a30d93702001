"""A field run: three nodes on three hosts (network namespaces), run as their person would.

Everything goes through the command line, with default settings: ``init``, ``config set``,
``start``, ``stop``, ``logs``, ``log-level``, ``name set``, ``friend``, ``note add``, ``peers``,
``status``. For ``--minutes`` it keeps doing what happens on real hosts, chosen by a seeded
random generator: a node killed with SIGKILL and started again, a node stopped and started, a
host's link cut and healed, notes to friends, a log level raised and lowered. After each event it
waits (with a bound) for what a person expects: the node seen again, the note delivered.

At the end every node is stopped and each one's log is read with ``logs --level warning``: a
WARNING or ERROR line is a finding unless the log classification table explains it (it then
never reaches WARNING). The last line printed is one JSON object: events, timings, findings.

    python tests/fieldrun.py --minutes 60          # needs root and iproute2
    make soak                                      # runs it through tests/test_field_netns.py
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import netns  # noqa: E402

PORT = 4571  # any port: each host has its own address
NAMES = ("alice", "bob", "carol")


class Host:
    """One host (namespace) with one node home, driven through ``meshnode`` commands."""

    def __init__(self, lab: netns.Lab, index: int, root: Path):
        self.lab, self.index = lab, index
        self.name = NAMES[index]
        self.address = lab.addresses[index]
        self.home = root / self.name
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("MESHNODE_")}
        self.env["HOME"] = str(root)
        self.did = ""
        self.peer_id = ""

    def meshnode(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        cmd = [*self.lab.wrapper(self.index), sys.executable, "-m", "meshnode", "--home", str(self.home), *args]
        result = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout,
                                stdin=subprocess.DEVNULL)
        if check and result.returncode != 0:
            raise AssertionError(f"{self.name}: meshnode {' '.join(args)} exited {result.returncode}:\n"
                                 f"{result.stdout[-2000:]}{result.stderr[-2000:]}")
        return result

    def json(self, *args: str):
        return json.loads(self.meshnode(*args, "--json").stdout)

    def init(self) -> None:
        self.meshnode("init", "--name", self.name)
        self.meshnode("config", "set", "net.listen", f"/ip4/{self.address}/tcp/{PORT}")
        status = self.json("status")
        self.did, self.peer_id = status["did"], status["peer_id"]

    @property
    def multiaddr(self) -> str:
        return f"/ip4/{self.address}/tcp/{PORT}/p2p/{self.peer_id}"

    def pid(self) -> int | None:
        status = self.json("status")
        return status.get("pid") if status.get("running") else None

    def peers(self) -> dict[str, str]:
        return {p["did"]: p["liveness"] for p in self.json("peers")}


def wait_until(predicate, timeout: float, what: str, interval: float = 1.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except AssertionError as exc:  # a command that failed while the mesh moves: ask again
            last = str(exc)
        else:
            if last:
                return last
        time.sleep(interval)  # a poll interval between questions
    raise AssertionError(f"timed out after {timeout} s waiting for {what}; last answer: {last!r}")


class FieldRun:
    def __init__(self, lab: netns.Lab, root: Path, seed: int):
        self.hosts = [Host(lab, i, root) for i in range(3)]
        self.lab = lab
        self.rng = random.Random(seed)
        self.events: list[dict] = []
        self.timings: dict[str, list[float]] = {"seen_again_s": [], "note_delivered_s": [], "stop_s": [],
                                                "start_s": []}
        self.notes_sent = 0
        self.renames = 0
        self.failures: list[str] = []

    # --- setting up, as a person would -----------------------------------------------------------
    def setup(self) -> None:
        for host in self.hosts:
            host.init()
        for host in self.hosts[1:]:
            (host.home / "bootstrap.txt").write_text(self.hosts[0].multiaddr + "\n")
        for host in self.hosts:
            self.start(host)
        for host in self.hosts:
            for other in self.hosts:
                if other is not host:
                    host.meshnode("name", "set", other.did, f"{other.name}-{host.name[0]}")
                    host.meshnode("friend", "add", f"{other.name}-{host.name[0]}")
        self.wait_all_ok(120, "the three nodes to see each other after the first start")

    def all_ok(self) -> bool:
        return all(h.peers().get(o.did) == "ok" for h in self.hosts for o in self.hosts if o is not h)

    def wait_all_ok(self, timeout: float, what: str) -> float:
        began = time.monotonic()
        wait_until(self.all_ok, timeout, what)
        return time.monotonic() - began

    def start(self, host: Host) -> None:
        began = time.monotonic()
        out = host.meshnode("start", timeout=90)
        self.timings["start_s"].append(time.monotonic() - began)
        assert host.pid(), f"{host.name}: `start` said {out.stdout!r} but status says not running"

    # --- what happens on real hosts -------------------------------------------------------------
    def restarted(self, host: Host) -> None:
        """After ``host`` started again: the time until it sees both others alive (its own view
        starts from what it last knew) and they see it."""
        began = time.monotonic()
        others = [h for h in self.hosts if h is not host]
        wait_until(lambda: all(host.peers().get(o.did) == "ok" for o in others), 180,
                   f"{host.name} to see the others alive after its start")
        wait_until(self.all_ok, 180, f"every node to see every other alive after {host.name} started")
        self.timings["seen_again_s"].append(time.monotonic() - began)

    def kill_and_restart(self, host: Host) -> None:
        pid = host.pid()
        assert pid, f"{host.name} is not running before the kill"
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not host.pid(), 30, f"{host.name} to show as not running after SIGKILL")
        time.sleep(self.rng.uniform(5, 30))  # the host stays down a while, as a crashed one would
        self.start(host)
        self.restarted(host)

    def stop_and_start(self, host: Host) -> None:
        began = time.monotonic()
        out = host.meshnode("stop", timeout=90)
        self.timings["stop_s"].append(time.monotonic() - began)
        assert not host.pid(), f"{host.name}: `stop` said {out.stdout!r} but it still runs"
        time.sleep(self.rng.uniform(2, 20))
        self.start(host)
        self.restarted(host)

    def cut_and_heal(self, host: Host) -> None:
        self.lab.cut(host.index)
        time.sleep(self.rng.uniform(20, 90))  # a link down for a while
        self.lab.heal(host.index)
        self.timings["seen_again_s"].append(self.wait_all_ok(180, f"{host.name} seen again after its link healed"))

    def note_to_friends(self, host: Host) -> None:
        self.notes_sent += 1
        other = self.rng.choice([h for h in self.hosts if h is not host])
        text = f"field note {self.notes_sent} from {host.name} for @{other.name}"
        began = time.monotonic()
        did = host.meshnode("note", "add", "--audience", "friends", text).stdout.split()[0]
        for receiver in self.hosts:
            if receiver is not host:
                wait_until(lambda r=receiver: any(n.get("container_did") == did or n.get("did") == did
                                                  for n in r.json("note", "list", "--limit", "50")),
                           120, f"note {did} from {host.name} at {receiver.name}")
        self.timings["note_delivered_s"].append(time.monotonic() - began)

    def log_level_round(self, host: Host) -> None:
        host.meshnode("log-level", "debug")
        time.sleep(self.rng.uniform(5, 20))
        host.meshnode("log-level", "info")

    def rename(self, host: Host) -> None:
        """The person renames the node (config set node.name, a restart): the others learn the new name."""
        self.renames += 1
        new = f"{host.name}{self.renames}"
        host.meshnode("config", "set", "node.name", new)
        host.meshnode("stop", timeout=90)
        self.start(host)
        self.restarted(host)
        for other in self.hosts:
            if other is not host:
                wait_until(lambda o=other: any(r["did"] == host.did and r["announced"] == new
                                               for r in o.json("name", "list")),
                           180, f"{other.name} to learn {host.name}'s new name {new!r}")

    EVENTS = ("kill_and_restart", "stop_and_start", "cut_and_heal", "note_to_friends", "note_to_friends",
              "log_level_round", "rename")

    def run(self, minutes: float) -> None:
        end = time.monotonic() + minutes * 60
        while time.monotonic() < end:
            name = self.rng.choice(self.EVENTS)
            host = self.rng.choice(self.hosts)
            began = time.monotonic()
            try:
                getattr(self, name)(host)
                outcome = "ok"
            except AssertionError as exc:  # a finding: said, then the run goes on with every node up
                outcome = "FAILED"
                self.failures.append(f"{time.strftime('%H:%M:%S')} {name} {host.name}: {exc}")
                self.lab.heal(host.index)
                for h in self.hosts:
                    if not h.pid():
                        self.start(h)
            self.events.append({"event": name, "host": host.name, "s": round(time.monotonic() - began, 1),
                                "outcome": outcome})
            print(f"{time.strftime('%H:%M:%S')} {name} {host.name} {outcome} ({self.events[-1]['s']} s)", flush=True)
            time.sleep(self.rng.uniform(10, 60))  # the quiet between events

    # --- the end: stop, and read each node's log -------------------------------------------------
    def finish(self) -> dict:
        findings: list[str] = []
        for host in self.hosts:
            host.meshnode("stop", timeout=90)
            logged = host.meshnode("logs", "--level", "warning", "-n", "100000").stdout.splitlines()
            findings += [f"{host.name}: {line}" for line in logged if line.strip()]
            console = host.home / "logs" / "console.log"  # what a detached node printed beside its log
            if console.exists():
                findings += [f"{host.name} console: {line}" for line in console.read_text(errors="replace").splitlines()
                             if "Traceback" in line or " WARNING " in line or " ERROR " in line]
        return {"bench": "fieldrun", "events": len(self.events),
                "by_event": {e: sum(1 for x in self.events if x["event"] == e) for e in set(self.EVENTS)},
                "timings": {k: {"n": len(v), "median": round(statistics.median(v), 1) if v else None,
                                "max": round(max(v), 1) if v else None} for k, v in self.timings.items()},
                "failures": self.failures, "findings": findings}


def field_run(minutes: float, seed: int = 35, root: Path | None = None) -> dict:
    reason = netns.available()
    if reason is not None:
        raise SystemExit(f"fieldrun: {reason}")
    with tempfile.TemporaryDirectory(prefix="fieldrun") as tmp:
        root = root or Path(tmp)
        lab = netns.Lab(3)
        run = FieldRun(lab, root, seed)
        try:
            run.setup()
            run.run(minutes)
            return run.finish()
        finally:
            for host in run.hosts:  # whatever happened: no node outlives the run
                pid = None
                try:
                    pid = host.pid()
                except Exception:
                    pass
                if pid:
                    os.kill(pid, signal.SIGKILL)
            lab.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--seed", type=int, default=35)
    parser.add_argument("--keep", type=Path, help="keep the homes (logs, databases) in this folder")
    args = parser.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    result = field_run(args.minutes, args.seed, args.keep)
    print(json.dumps(result))
    sys.exit(1 if result["findings"] or result["failures"] else 0)


if __name__ == "__main__":
    main()
