"""Real meshnode processes for multi-node tests: start, ask over the control channel, stop.

Each node is ``python -m meshnode run`` in its own home, configured through its
environment and its bootstrap.txt only. Output is read on a thread so a test
can wait for a line with a deadline; conditions across nodes are awaited with
``wait_until`` (a deadline and a short poll of the nodes' own answers).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from meshnode.net import control
from meshnode.net.control import ControlError

FAST_NET = {
    "MESHNODE_NET_HEARTBEAT_SECONDS": "0.5",
    "MESHNODE_NET_QUIET_AFTER_SECONDS": "1.5",
    "MESHNODE_NET_STALE_AFTER_SECONDS": "3",
    "MESHNODE_NET_DEAD_AFTER_SECONDS": "30",
    "MESHNODE_NET_SYNC_SECONDS": "2",
    # test meshes are made of strangers to each other: all strangers together are stored at 1/s past a
    # burst of 10 by default (issue 36), which would make every test that spreads more than 30 containers
    # wait on the rate; the rate the bench and attack tests measure is restored by ATTACK_NET
    "MESHNODE_LIMITS_UNKNOWN_WRITES_PER_SECOND": "50",
    "MESHNODE_LIMITS_UNKNOWN_WRITES_BURST": "1000",
}


@contextlib.contextmanager
def _as_cli(env: dict[str, str]):
    """This process dressed as a CLI process started with ``env``: its MESHNODE_* settings only, and
    the umask given back after (the CLI sets 077)."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("MESHNODE_")}
    for key in saved:
        del os.environ[key]
    os.environ.update({k: v for k, v in env.items() if k.startswith("MESHNODE_")})
    mask = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(mask)
        for key in [k for k in os.environ if k.startswith("MESHNODE_")]:
            del os.environ[key]
        os.environ.update(saved)


def init_in_process(home: Path, name: str, env: dict[str, str]) -> str:
    """``meshnode --home HOME init --name NAME`` in this process, as the CLI would run it with ``env``
    (a subprocess cost ~1 s of interpreter and import start-up per node). Returns the node's DID."""
    from meshnode.store.home import init_home

    with _as_cli(env):
        _, result = init_home(home, name=name, passphrase=None, exist_ok=False)
    return result.key.did


class Node:
    def __init__(self, root: Path, name: str, env: dict[str, str] | None = None, wrapper: list[str] | None = None):
        self.name = name
        self.home = root / name
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("MESHNODE_")}
        self.env.update({"HOME": str(root), "MESHNODE_NET_LISTEN": "/ip4/127.0.0.1/tcp/0",
                         "MESHNODE_WEB_LISTEN": "127.0.0.1:0",  # parallel nodes never collide on 8470
                         **FAST_NET, **(env or {})})
        self.wrapper = wrapper or []
        self.proc: subprocess.Popen | None = None
        self.lines: queue.Queue = queue.Queue()
        self.output: list[str] = []
        self.peer_id = None
        self.addresses: list[str] = []
        self.web_url: str | None = None  # http://127.0.0.1:PORT/ from the `web:` line
        self.did = init_in_process(self.home, name, self.env)

    def cli(self, *args: str) -> str:
        """Run ``meshnode --home <this node's home> ARGS`` as its user would; its output (exit 0 asserted)."""
        result = self.run_cli(*args)
        assert result.returncode == 0, result.stderr
        return result.stdout

    def run_cli(self, *args: str):
        """``meshnode --home <this node's home> ARGS``: exit code, stdout and stderr. It runs in this process
        (tests/cli_runner.py: ``cli.main`` with the node's settings), except in a network namespace
        (``wrapper``): there, as a process inside it."""
        argv = ["--home", str(self.home), *args]
        if self.wrapper:
            return subprocess.run([*self.wrapper, sys.executable, "-m", "meshnode", *argv], env=self.env,
                                  capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        from cli_runner import run_cli_in_process

        return run_cli_in_process(argv, Path(self.env["HOME"]), env=self.env)

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
            elif line.startswith("web:"):
                self.web_url = line.split()[1]
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
        report(nodes)
        raise
    finally:
        for node in nodes:
            node.kill()
        lab.close()


def report(nodes: list) -> None:
    """What each node knew and said, printed for a failed test's report."""
    for node in nodes:
        print(f"--- {node.name} ({node.did}) peers: {node.try_call('peers')}")
        print(f"status: {node.try_call('status')}")
        print("\n".join(node.drain(timeout=0.5)[-40:]))


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


# --- a node under attack (tests/test_mesh_attack.py, bench/attack.py) -------------------

FLOOD = Path(__file__).with_name("flood_peer.py")
# Heartbeats every second and quiet after 4 s of silence: an event loop that stalls for seconds
# shows as a flap, while a node that keeps serving misses no deadline (4 s is 4 heartbeats, far
# above any scheduling delay on two busy cores). Sync every 10 s, as a busy mesh might.
ATTACK_NET = {"MESHNODE_NET_HEARTBEAT_SECONDS": "1", "MESHNODE_NET_QUIET_AFTER_SECONDS": "4",
              "MESHNODE_NET_STALE_AFTER_SECONDS": "8", "MESHNODE_NET_DEAD_AFTER_SECONDS": "60",
              "MESHNODE_NET_SYNC_SECONDS": "10",
              "MESHNODE_LIMITS_UNKNOWN_WRITES_PER_SECOND": "1", "MESHNODE_LIMITS_UNKNOWN_WRITES_BURST": "10"}
# each attack from its own loopback address, in its own /16: what a node holds against one
# attacker's address or subnet does not meet the next attack at the door
SOURCES = {"bigframe": "127.10.0.1", "identities": "127.11.0.1", "junk": "127.12.0.1", "slowloris": "127.13.0.1",
           "biggossip": "127.14.0.1", "churn": "127.15.0.1", "topics": "127.16.0.1", "control": "127.17.0.1",
           "mixed": "127.18.0.1", "newcomer": "127.19.0.1"}


def pct(values: list[float], p: float) -> float | None:
    """The ``p``-th percentile (nearest rank) of ``values``; None for none."""
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))], 2)


class Probe:
    """Ask ``ask()`` (returns milliseconds, or None to time the call itself) on a thread,
    every ``interval`` s until stopped; a failed call counts ``failed_ms`` and a failure."""

    def __init__(self, ask, interval: float, failed_ms: float):
        self.ask, self.interval, self.failed_ms = ask, interval, failed_ms
        self.ms: list[float] = []
        self.failures = 0
        self.last = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.perf_counter()
            try:
                self.last = self.ask()
                self.ms.append(self.last if isinstance(self.last, (int, float)) else
                               (time.perf_counter() - started) * 1000)
            except ControlError:
                self.failures += 1
                self.ms.append(self.failed_ms)
            self._stop.wait(self.interval)  # the pace of the questions, not a guess about the node

    def __enter__(self) -> "Probe":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=120)

    def figures(self, name: str) -> dict:
        return {f"{name}_ms_p50": pct(self.ms, 50), f"{name}_ms_p99": pct(self.ms, 99),
                f"{name}_n": len(self.ms), f"{name}_failed": self.failures}


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of process ``pid`` so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("VmRSS"))
    return round(int(line.split()[1]) / 1024, 1)


def data_bytes(node: Node) -> int:
    """What the node's database takes on disk (the database file and its write-ahead log)."""
    return sum(p.stat().st_size for p in (node.home / "data").glob("*.db*"))


def not_ok(victim: Node) -> int:
    """How often ``victim`` has marked a peer less than ok (quiet, stale or dead) since it started."""
    return sum(metric(victim, "liveness_changes", state=s) for s in ("quiet", "stale", "dead"))


def watch(victim: Node, honest: Node, until) -> dict:
    """Until ``until()`` returns (its value is kept as "result"): the victim's control `status`
    round trips (every 0.1 s), the honest node's pings of the victim (every 0.25 s, the whole
    control call: the ping's own rtt leaves out opening its stream, where a stalled victim
    makes it wait), the victim's
    CPU share (of one core), its peak RSS, and how often it marked a peer less than ok."""
    pid = victim.proc.pid
    flaps, cpu, started = not_ok(victim), cpu_seconds(pid), time.perf_counter()
    rss = [rss_mib(pid)]
    with Probe(lambda: victim.call("status", timeout=60) and None, 0.1, 60_000) as status, \
            Probe(lambda: honest.call("ping", {"did": victim.did}, timeout=60) and None, 0.25, 10_000) as ping, \
            Probe(lambda: rss.append(rss_mib(pid)) or 0.0, 0.25, 0.0):
        result = until()
        wall = time.perf_counter() - started
        cpu = cpu_seconds(pid) - cpu  # up to now; the probes' last questions may still be waiting for answers
    return {**status.figures("status"), **ping.figures("ping"), "cpu_share": round(cpu / wall, 2),
            "rss_peak_mib": max(rss), "not_ok": not_ok(victim) - flaps, "seconds": round(wall, 1), "result": result}


def as_another_host() -> None:
    """For tests/flood_peer.py's processes (attackers, newcomers): they stand for other hosts, but here
    they share the victim's two cores, so they run at nice 10. The victim is then measured on what
    reaches it over the network, not on which process the host's scheduler picks first (a newcomer's
    Python start-up, ~2 CPU-s, in the middle of an attack set the honest p99 at the noise edge)."""
    os.nice(10)


def flood(victim: Node, honest: Node, mode: str, seconds: float, *options: str, source: str | None = None) -> dict:
    """Run tests/flood_peer.py MODE against ``victim`` for ``seconds`` (from ``source``, by default
    the mode's own in SOURCES) while ``watch``ing it; the figures, with the attacker's own summary
    as "attacker"."""
    address = next(a for a in victim.addresses if "/ip4/127.0.0.1/" in a)
    proc = subprocess.Popen([sys.executable, str(FLOOD), mode, address, "--seconds", str(seconds),
                             "--source", source or SOURCES[mode], *options],
                            env=victim.env, text=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=as_another_host)
    killer = threading.Timer(seconds + 120, proc.kill)  # a hung attacker must not hang the run
    killer.start()
    try:
        started = proc.stdout.readline()
        assert started.strip() == "started", f"flood_peer {mode} did not start: {started!r} {proc.stderr.read()[-2000:]}"
        spent = cpu_seconds(proc.pid)
        figures = watch(victim, honest, proc.stdout.readline)  # its summary line comes at its deadline
        with contextlib.suppress(OSError):  # the attacker's own CPU (of one core): it shares the victim's cores
            figures["attacker_cpu_share"] = round((cpu_seconds(proc.pid) - spent) / figures["seconds"], 2)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate(timeout=10)
    finally:
        killer.cancel()
    line = figures.pop("result")
    assert line.strip(), f"flood_peer {mode} printed no summary: {err[-2000:]}"
    return {**figures, "attacker": json.loads(line)}


def newcomers(victim: Node, sources: list[str], wait: float) -> dict[str, dict]:
    """Honest newcomers (tests/flood_peer.py newcomer, one process: fresh identities dialling from
    each of ``sources``) ask ``victim`` for a container it lacks, again once a second until served
    or ``wait`` s pass. Per source: {"connected", "served": bools, "connected_after_s",
    "served_after_s": seconds or None, "tries"}."""
    address = next(a for a in victim.addresses if "/ip4/127.0.0.1/" in a)
    proc = subprocess.run([sys.executable, str(FLOOD), "newcomer", address, "--seconds", str(wait),
                           "--source", ",".join(sources)],
                          env=victim.env, text=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=wait + 120,
                          preexec_fn=as_another_host)
    lines = proc.stdout.strip().splitlines()
    assert len(lines) >= 2 and lines[0] == "started", f"flood_peer newcomer failed: {proc.stderr[-2000:]}"
    seen = json.loads(lines[-1]).get("newcomers", {})
    return {source: {"connected": seen.get(source, {}).get("connected_after_s") is not None,
                     "served": seen.get(source, {}).get("served_after_s") is not None, "source": source,
                     **seen.get(source, {})} for source in sources}


# --- many nodes at once (tests/test_mesh_gossip_complete.py) ---------------------------

def start_all(nodes: list[Node], timeout: float = 60.0, links: int = 4, seed: int = 0) -> None:
    """Start ``nodes`` a few at a time (threads; the processes are what is slow), each bootstrapping
    from ``links`` nodes started before it, chosen at random (``seed``): a connected mesh whose
    formation does not wait on discovery. Returns when every one printed "ready"."""
    import random
    from concurrent.futures import ThreadPoolExecutor

    rng = random.Random(seed)
    nodes[0].start(timeout)
    up = [nodes[0]]
    with ThreadPoolExecutor(max_workers=4) as pool:
        for i in range(1, len(nodes), 4):
            wave = nodes[i:i + 4]
            for node in wave:
                node.set_bootstrap(*rng.sample(up, min(links, len(up))))
            for future in [pool.submit(node.start, timeout) for node in wave]:
                future.result()
            up += wave


# --- mesh formation (tests/test_mesh_formation.py, bench/mesh.py) ------------------------

def start_from_seed(root: Path, count: int, env: dict[str, str] | None = None, prefix: str = "m",
                    timeout: float = 120.0) -> list[Node]:
    """``count`` nodes: the first (the seed) started alone, then all the others at once, each with
    only the seed in its bootstrap.txt. Returns them started (after the last one said ready); the
    caller stops or kills them."""
    nodes = [Node(root, f"{prefix}{i}", env=env) for i in range(count)]
    try:
        nodes[0].start(timeout=timeout)
        for node in nodes[1:]:
            node.set_bootstrap(nodes[0], address_filter="/ip4/127.0.0.1/")
        errors: list[BaseException] = []

        def start(node: Node) -> None:
            try:
                node.start(timeout=timeout)
            except BaseException as exc:  # reported below, on the caller's thread
                errors.append(exc)

        threads = [threading.Thread(target=start, args=(n,), daemon=True) for n in nodes[1:]]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout + 10)
        if errors:
            raise errors[0]
    except BaseException:
        for node in nodes:
            node.kill()
        raise
    return nodes


def at_degree(node: Node, count: int) -> bool:
    """``node`` is connected to its GossipSub degree (or to every other of ``count`` nodes when
    fewer) and its GossipSub mesh of every topic holds at least degree_low peers (or all)."""
    state = node.try_call("formation", timeout=10)
    if not state:
        return False
    want = min(state["degree"], count - 1)
    return state["connected"] >= want and all(n >= min(state["degree_low"], count - 1)
                                              for n in state["gossip_mesh"].values())


def find_all(node: Node, targets: list[Node], timeout: float = 30.0) -> tuple[dict[str, float], dict[str, str]]:
    """``node`` finds each target by DID once: ({did: milliseconds of the control call} for those
    found, {did: error} for the others)."""
    found, failed = {}, {}
    for target in targets:
        started = time.perf_counter()
        try:
            answer = node.call("find", {"did": target.did}, timeout=timeout)
        except (ControlError, OSError) as exc:  # OSError: the control connection reset (the node stopping?)
            failed[target.did] = f"{type(exc).__name__}: {exc}"
            continue
        if answer.get("peer_id") == target.peer_id and answer.get("connected"):
            found[target.did] = (time.perf_counter() - started) * 1000
            if found[target.did] > 1000 and os.environ.get("MESHBENCH_SLOW"):  # where a slow find spent it
                print(f"slow find {node.name}->{target.name}: {found[target.did]:.0f} ms, node says {answer}")
        else:
            failed[target.did] = f"wrong answer {answer!r}"
    return found, failed


def cpu_s(nodes) -> float:
    """CPU seconds the nodes' processes have used so far (user + system, from /proc)."""
    total = 0
    for n in nodes:
        try:
            fields = Path(f"/proc/{n.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, AttributeError):
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / os.sysconf("SC_CLK_TCK")
