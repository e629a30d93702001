"""spawn_child: the steps of a spawn in order, each undone if a later one fails.

Synchronous: the CLI calls it directly (a stopped parent) and the node from a worker thread (a
running parent, through ``LiveParent``). Every refusal that does not depend on the host comes
before anything is written; once the child's home exists, a failure removes it again together
with the parent's rows for the child, and stops a process it started. A child that started but
did not answer in time is left as it is (``not_reachable``): it may only be slow.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

import trio

from meshnode.net import control
from meshnode.base.config import Config
from meshnode.base.container.timefmt import now_ms as _now_ms
from meshnode.base.errors import MeshnodeError
from meshnode.store.home import init_home
from meshnode.base.identity.keyfile import PASSPHRASE_ENV
from meshnode.base.identity.keys import NodeKey
from meshnode.records import family
from meshnode.engines.spawn import autostart, bundle, child_config, friends, launch, names, ports, seed
from meshnode.base.errors import SpawnError
from meshnode.engines.spawn.model import (AUTOSTARTS, KINDS, SpawnRequest, SpawnResult, SpawnSettings,
                                          check_child_name, default_name)
from meshnode.engines.spawn.parent import ParentSide
from meshnode.store.database import Database, sql_errors

log = logging.getLogger("meshnode.engines.spawn")
HOME_PREFIX = "CCORE-"
DID_PREFIX = "did:key:"
DID_SUFFIX_CHARS = 48  # an Ed25519 did:key after "did:key:" (z6Mk...)
SOCKET_TAIL = os.path.join("data", control.SOCKET_NAME)
POLL_SECONDS = 0.2  # between two reachability probes of a started child
# one spawn at a time in a process: the checks (max_children, default name, ports taken) and the
# child's row must not interleave with another spawn's (the node runs each on a worker thread)
_ONE_AT_A_TIME = threading.Lock()


def spawn_child(config: Config, key: NodeKey, req: SpawnRequest, parent: ParentSide, *,
                now_ms: Callable[[], int] = _now_ms) -> SpawnResult:
    """Make a child of ``req.kind`` (see the module's docstring); one spawn at a time per process."""
    with _ONE_AT_A_TIME:
        return _spawn_child(config, key, req, parent, now_ms=now_ms)


def _spawn_child(config: Config, key: NodeKey, req: SpawnRequest, parent: ParentSide, *,
                 now_ms: Callable[[], int]) -> SpawnResult:
    settings = SpawnSettings.from_config(config)
    autostart_kind = check_request(req, settings)
    choice = friends.parse(req.friends, req.kind)
    if req.name is not None:
        check_child_name(req.name)
        names.check_free(req.name, parent.read(lambda db: names.live_names(db, now_ms())))
    depth = check_family_size(parent, settings, now_ms())
    if req.bundle is not None:
        return bundle.write_bundle(config, key, req, parent, now_ms=now_ms(), friends=choice)
    taken = parent.read(_children_taken)
    name = req.name if req.name is not None else default_name(parent.name, req.kind, taken["names"])
    place = home_place(req, parent)
    addresses = parent.addresses()  # parent_never_ran before anything is written
    undo = _Undo()
    try:
        home, child_key = make_home(place, req.home, name, undo)
        avoid = taken["ports"] | parent_ports(config, addresses)
        listen_port = ports.free_port(child_config.listen_host(config), avoid)
        web_port = ports.free_port(child_config.web_host(config), avoid | {listen_port})
        child = child_config.write(home, config, name=name, kind=req.kind, listen_port=listen_port, web_port=web_port,
                                   parent_did=parent.did)
        lines = child_config.write_bootstrap(home, addresses, parent_peer_id=parent.peer_id,
                                             parent_did=parent.did, parent_name=parent.name)
        t = now_ms()
        report = seed_and_tie(parent, child, req.kind, depth, lines, t, choice)
        rec = family.ChildRecord(did=child_key.did, peer_id=child_key.peer_id, name=name, kind=req.kind, depth=depth,
                                 autostart=autostart_kind, home=str(home), listen_port=listen_port,
                                 web_port=web_port, addresses=wildcards_as_loopback(child.get("net", "listen")),
                                 seed_report=report)
        parent.write(lambda db: family.record_child(db, rec, t))
        undo.push(lambda: _forget(parent, child_key.did))
        installed = autostart.install(home, child_key.did, name, autostart_kind)
        undo.push(lambda: autostart.uninstall(home))  # an enabled unit is disabled, not only its file removed
        result = SpawnResult(did=child_key.did, name=name, kind=req.kind, depth=depth, home=str(home),
                             listen=list(child.get("net", "listen")), web_listen=child.get("web", "listen"),
                             bootstrap=lines, seed=report, autostart=installed)
        if req.start:
            wait = req.wait_seconds if req.wait_seconds is not None else settings.wait_seconds
            start_and_wait(home, child, child_key.did, autostart_kind, parent, wait, undo, result)
    except BaseException:
        undo.run()
        raise
    return result


def check_family_size(parent: ParentSide, settings: SpawnSettings, now: int) -> int:
    """The new child's depth, once [spawn] max_children (open bundle invitations count: their
    children may still arrive) and max_depth allow one more child."""
    count, depth = parent.read(family.count_active), parent.read(family.depth_of) + 1
    invited = parent.read(lambda db: open_invitations(db, now))
    if count + invited >= settings.max_children:
        waiting = f" and {invited} open bundle invitation(s)" if invited else ""
        raise SpawnError("too_many_children", f"this node has {count} active children{waiting}; [spawn] max_children"
                         f" is {settings.max_children} (`meshnode children remove` one, or raise the limit)")
    if depth > settings.max_depth:
        raise SpawnError("too_deep", f"a child of this node would be generation {depth}; [spawn] max_depth is"
                         f" {settings.max_depth}")
    return depth


def home_place(req: SpawnRequest, parent: ParentSide) -> Path:
    """The folder the child's home goes in, once the home is known to fit a control socket path
    and a ``--home`` is known not to exist yet."""
    place = req.home.parent if req.home is not None else parent.home.parent
    if req.home is not None:
        check_home_fits(req.home)
    else:  # the DID is not known yet, its length is
        check_home_fits(place / (HOME_PREFIX + "z" * DID_SUFFIX_CHARS), str(place / "CCORE-<DID>" / SOCKET_TAIL))
    if req.home is not None and (req.home.exists() or req.home.is_symlink()):
        raise SpawnError("home_exists", f"{req.home} already exists; pick another --home")
    return place


def open_invitations(db: Database, now: int) -> int:
    """Bundle invitations not used yet and not expired: children that may still arrive."""
    with sql_errors("counting invitations"):
        return db.conn.execute("SELECT count(*) FROM spawn_invitations WHERE used_by_did IS NULL AND expires_ms > ?",
                               (now,)).fetchone()[0]


def check_request(req: SpawnRequest, settings: SpawnSettings) -> str:
    """The kind and the autostart asked for, checked; the autostart to use."""
    if req.kind not in KINDS:
        raise SpawnError("bad_kind", f"kind must be one of {', '.join(KINDS)}, not {str(req.kind)[:40]!r}")
    if req.bundle is not None:  # the home, autostart and start are chosen on the other host
        given = [flag for flag, used in (("--home", req.home is not None), ("--start", req.start),
                                         ("--autostart", req.autostart is not None)) if used]
        if given:
            raise SpawnError("bad_request", f"{', '.join(given)} cannot go with --bundle: they are chosen on the"
                             " other host (meshnode init --from-bundle FILE --autostart ... --start)")
    elif req.expires_hours is not None:
        raise SpawnError("bad_request", "--expires is the lifetime of a bundle's invitation: it goes with --bundle")
    chosen = req.autostart if req.autostart is not None else settings.autostart
    if chosen not in AUTOSTARTS:
        raise SpawnError("bad_autostart", f"autostart must be one of {', '.join(AUTOSTARTS)}, not {str(chosen)[:40]!r}")
    return chosen


def check_home_fits(home: Path, shown: str | None = None) -> None:
    """The child's control socket (``<home>/data/control.sock``) must fit a unix socket path."""
    path = os.fsencode(os.path.abspath(home / SOCKET_TAIL))
    if len(path) > control.MAX_SOCKET_PATH:
        raise SpawnError("home_too_deep", f"the child's control socket {shown or os.fsdecode(path)} would be"
                         f" {len(path)} bytes, over the {control.MAX_SOCKET_PATH} a unix socket allows;"
                         " pass a shorter --home")


def make_home(place: Path, wanted: Path | None, name: str, undo: "_Undo") -> tuple[Path, NodeKey]:
    """The child's key and home: made in a temporary folder beside the target (``init_home``, so the
    DID is known), then renamed into place in one step."""
    place.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".spawn-", dir=place))
    undo.push(lambda: shutil.rmtree(tmp, ignore_errors=True))
    paths = {"store": {"path": "data/meshnode.db"}, "keys": {"path": "keys/node.key"}}  # never the parent's
    _, made = init_home(tmp, name=name, passphrase=os.environ.get(PASSPHRASE_ENV) or None, exist_ok=False,
                        overrides=paths)
    home = wanted if wanted is not None else place / (HOME_PREFIX + made.key.did[len(DID_PREFIX):])
    check_home_fits(home)
    try:
        os.rename(tmp, home)  # one step; a --home that exists was refused before anything was made
    except OSError as exc:
        raise SpawnError("home_exists", f"cannot make {home}: {exc.strerror}") from None
    undo.push(lambda: shutil.rmtree(home, ignore_errors=True))
    return home, made.key


def seed_and_tie(parent: ParentSide, child: Config, kind: str, depth: int, bootstrap: list[str], t: int,
                 choice: "friends.Choice | None" = None) -> dict:
    """Seed the child's store from the parent's database file, keep the friends ``choice`` says (the
    parent only by default), then write its side of the tie."""
    db = Database(child.db_path)
    try:
        report = seed.seed_child_store(parent.db_path, db, kind, parent_did=parent.did, now_ms=t).to_dict()
        friends.keep(db, choice or friends.parse(None, kind), now_ms=t)
        family.tie_parent(db, parent_did=parent.did, parent_peer_id=parent.peer_id, parent_name=parent.name,
                          addresses=bootstrap, kind=kind, depth=depth, now_ms=t)
    finally:
        db.close()
    return report


def start_and_wait(home: Path, child: Config, did: str, autostart_kind: str, parent: ParentSide, wait: float,
                   undo: "_Undo", result: SpawnResult) -> None:
    """Start the child and wait until the parent reaches it (running parent) or it answers on its
    control socket (stopped parent). It exits first: ``start_failed`` (stopped, undone). Time
    runs out: ``not_reachable`` (left running, nothing undone)."""
    started = time.monotonic()
    try:
        launched = parent.launch(home, autostart_kind)
    except MeshnodeError as exc:
        raise SpawnError("start_failed", f"the child did not start: {exc.reason}") from None
    undo.push(lambda: launch.stop(home, autostart_kind))
    result.started = True
    end = started + wait
    sock = control.socket_path(child.db_path.parent)
    while True:
        if parent.reached(did) if parent.running else _answers(sock):
            result.reachable_seconds = round(time.monotonic() - started, 3)
            return
        if launched.get("via") in ("direct", "script") and parent.exited(launched):  # systemd may restart it
            raise SpawnError("start_failed", f"the child exited at start; its console ends:\n{launch.log_tail(home)}")
        if time.monotonic() >= end:
            undo.clear()  # it may only be slow: leave it, with everything it needs
            raise SpawnError("not_reachable", f"the child {did} started but was not reachable within {wait:g} s;"
                             f" it is left running (home {home}); its console ends:\n{launch.log_tail(home)}")
        time.sleep(POLL_SECONDS)


def _answers(sock: Path) -> bool:
    try:
        control.call(sock, "status", timeout=2.0)
        return True
    except MeshnodeError:
        return False


def _children_taken(db: Database) -> dict:
    """The names and ports of every child ever spawned here (removed ones too)."""
    rows = family.child_rows(db)
    return {"names": {r["name"] for r in rows},
            "ports": {r[k] for r in rows for k in ("listen_port", "web_port") if r[k]}}


def parent_ports(config: Config, addresses: list[str]) -> set[int]:
    """The ports the parent uses or will use (listen, announced, web)."""
    found = set()
    for text in [*config.get("net", "listen"), *addresses]:
        parts = text.split("/")
        if "tcp" in parts and parts.index("tcp") + 1 < len(parts) and parts[parts.index("tcp") + 1].isdigit():
            found.add(int(parts[parts.index("tcp") + 1]))
    web_port = config.get("web", "listen").rpartition(":")[2]
    if web_port.isdigit():
        found.add(int(web_port))
    return found - {0}


def wildcards_as_loopback(listen: list[str]) -> list[str]:
    """A local child's listen addresses as the parent dials them (a wildcard as loopback)."""
    return [a.replace("/ip4/0.0.0.0/", "/ip4/127.0.0.1/", 1).replace("/ip6/::/", "/ip6/::1/", 1) for a in listen]


def forget_child(db: Database, did: str) -> None:
    """Undo ``family.record_child`` for a spawn that failed later: the child never existed."""
    with db.transaction() as conn:
        conn.execute("DELETE FROM children WHERE did = ?", (did,))
        conn.execute("DELETE FROM agent_peers WHERE id = ?", (did,))


def _forget(parent: ParentSide, did: str) -> None:
    """``forget_child`` through the parent; a node that stopped meanwhile (its loop answers a spawn
    job's thread with trio.Cancelled, its store is closed) is forgotten in its database file."""
    try:
        parent.write(lambda db: forget_child(db, did))
    except (trio.Cancelled, trio.RunFinishedError):
        db = Database(parent.db_path, create=False)
        try:
            forget_child(db, did)
        finally:
            db.close()


class _Undo:
    """What to take back, newest first, if a later step fails (each step best effort, logged)."""

    def __init__(self):
        self.steps: list[Callable[[], object]] = []

    def push(self, step: Callable[[], object]) -> None:
        self.steps.append(step)

    def clear(self) -> None:
        self.steps.clear()

    def run(self) -> None:
        while self.steps:
            step = self.steps.pop()
            try:
                step()
            except BaseException as exc:  # one failed undo (even a trio.Cancelled) must not keep the others from running
                log.warning("undoing a spawn step failed: %s: %s", type(exc).__name__, exc)
