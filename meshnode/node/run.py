"""The running node: identity, store, mesh and control channel in one nursery (``meshnode run``).

The composition root: every part is built here, in order, each given what it needs in its
constructor; nothing is patched into a part afterwards. Where a value exists only later (the web's
bound address, the reactor the cycle's sends ask) the part gets a holder made up front that is filled
once the value exists.

Shutdown is the same code path as a normal exit: SIGINT or SIGTERM cancels
the nursery; the store records the stop (best effort, quickly) and closes.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from typing import TextIO

import trio

from meshnode import __version__
from meshnode.base import node_log
from meshnode.faces.cli.common import _only
from meshnode.base.config import Config
from meshnode.base.config.command_line import config_of
from meshnode.base.container import format_ms, now_ms
from meshnode.net.control import socket_path
from meshnode.faces.control_server import serve_control
from meshnode.base.errors import MeshnodeError, StoreError
from meshnode.base.gil import shorten_switch_interval
from meshnode.base.heap import freeze_startup_heap
from meshnode.engines.cognition import catalogue, llm, mind_view, peer_validation, processes, sending
from meshnode.engines.cognition.tick_events import TickEvents
from meshnode.engines.gate import setup as gate_setup
from meshnode.engines.gate.gate import Gate
from meshnode.engines.gate.tools import TOOLS
from meshnode.engines.cognition.cycle import Cycle
from meshnode.domain.consensus.tendermint import BlockLimits, Timeouts
from meshnode.base.identity.keys import NodeKey
from meshnode.base.metrics import Metrics
from meshnode.net.author_rate import RateSettings
from meshnode.net.bootstrap import read_bootstrap
from meshnode.net.liveness import Thresholds
from meshnode.net.events import MeshHooks
from meshnode.net.mesh import Mesh, NetConfig
from meshnode.records.gmp import store_hooks as gmp_store_hooks
from meshnode.records.a2a.blocks import BlockSet, listing as a2a_block_rows
from meshnode.net.mesh_gmp import GmpSettings, MeshGmp
from meshnode.net.addresses import AddressLimits
from meshnode.net.budget import BudgetLimits
from meshnode.net.standing import PeerLimits
from meshnode.net.retry_hints import RetryLimits
from meshnode.net.strangers import StrangerLimits
from meshnode.app import actor
from meshnode.app.actor import Actor, person
from meshnode.app.actions.notes import write_note
from meshnode.app.context import App
from meshnode.app.dispatch import check_args, dispatch
from meshnode.engines.mcp_tools import service as mcp_tools_service
from meshnode.engines.spawn import hello as spawn_hello
from meshnode.engines.spawn.keeper import FamilyKeeper
from meshnode.engines.spawn.jobs import SpawnJobs
from meshnode.store import Store
from meshnode.store.quotas import Quotas
from meshnode.store.home import open_identity, running
from meshnode.base.identity.did import peer_id_to_did
from meshnode.faces.web.address import WebAddress

log = logging.getLogger("meshnode.node.run")
STOP_BUSY_TIMEOUT_MS = 500


def stranger_limits(limits: dict) -> dict:
    """The NetConfig fields of ``[limits]``' settings for unknown authors and peers."""
    return {
        "quotas": Quotas(author_containers=limits["unknown_author_containers"],
                         author_bytes=limits["unknown_author_kib"] * 1024,
                         total_containers=limits["unknown_total_containers"],
                         total_bytes=limits["unknown_total_mib"] * 1024 * 1024,
                         pool_containers=limits["unknown_pool_containers"],
                         pool_bytes=limits["unknown_pool_mib"] * 1024 * 1024),
        "known_min_trust": float(limits["known_min_trust"]),
        "author_rate": RateSettings(per_author_per_second=float(limits["unknown_gossip_per_second"]),
                                    per_author_burst=limits["unknown_gossip_burst"],
                                    total_per_second=float(limits["unknown_gossip_total_per_second"]),
                                    total_burst=limits["unknown_gossip_total_burst"],
                                    stranger_writes_per_second=float(limits["unknown_writes_per_second"]),
                                    stranger_writes_burst=limits["unknown_writes_burst"]),
        "max_unknown_peers": limits["unknown_peers"],
    }


def net_config(config: Config) -> NetConfig:
    net, peers, sync = config.values["net"], config.values["peers"], config.values["sync"]
    consensus = config.values["consensus"]
    bootstrap, problems = read_bootstrap(config.path("net", "bootstrap"))
    for problem in problems:
        log.warning("bootstrap.txt %s (skipped)", problem)
    return NetConfig(
        listen=list(net["listen"]), announce=list(net["announce"]), bootstrap=bootstrap, name=config.name,
        heartbeat_ms=int(net["heartbeat_seconds"] * 1000), gossip_heartbeat_s=float(net["gossip_heartbeat_seconds"]),
        max_connections=net["max_connections"],
        sync_s=float(net["sync_seconds"]), reputation_s=float(net["reputation_seconds"]),
        reputation_first_s=float(net["reputation_first_seconds"]),
        thresholds=Thresholds(int(net["quiet_after_seconds"] * 1000), int(net["stale_after_seconds"] * 1000),
                              int(net["dead_after_seconds"] * 1000)),
        interests=list(net["interests"]), expertise=list(net["expertise"]), roles=list(net["roles"]),
        peer_limits=PeerLimits(max_frame_bytes=peers["max_frame_bytes"],
                               messages_per_second=float(peers["messages_per_second"]), burst=peers["burst"],
                               max_outstanding=peers["max_outstanding"],
                               invalid_threshold=peers["invalid_threshold"],
                               ban_ms=int(peers["ban_seconds"] * 1000), max_peers=peers["max_records"]),
        budget_limits=BudgetLimits(ms_per_second=float(peers["cpu_ms_per_second"]),
                                   burst_ms=float(peers["cpu_burst_ms"]), known_factor=float(peers["known_factor"]),
                                   address_factor=float(peers["address_factor"]),
                                   subnet_factor=float(peers["subnet_factor"]), max_keys=peers["max_records"],
                                   strangers_ms_per_second=float(peers["strangers_cpu_ms_per_second"]),
                                   strangers_burst_ms=float(peers["strangers_cpu_burst_ms"])),
        stranger_limits=StrangerLimits(max_connections=peers["strangers_connections"],
                                       max_streams=peers["strangers_streams"],
                                       new_per_second=float(peers["new_peers_per_second"]),
                                       new_burst=peers["new_peers_burst"],
                                       idle_evict_ms=int(peers["strangers_idle_seconds"] * 1000),
                                       remembered=peers["max_records"],
                                       handshakes_per_second=float(peers["stranger_handshakes_per_second"]),
                                       handshakes_burst=peers["stranger_handshakes_burst"],
                                       stream_opens_per_second=float(peers["stranger_stream_opens_per_second"]),
                                       stream_opens_burst=peers["stranger_stream_opens_burst"],
                                       all_stream_opens_per_second=float(peers["strangers_stream_opens_per_second"]),
                                       all_stream_opens_burst=peers["strangers_stream_opens_burst"]),
        retry_limits=RetryLimits(tolerated=peers["early_pushes_tolerated"], weight=float(peers["early_push_weight"]),
                                 remembered=peers["max_records"]),
        address_limits=AddressLimits(connections_per_minute=float(peers["connections_per_minute"]),
                                     abuse_to_ban=peers["address_abuse"],
                                     abuse_window_ms=int(peers["address_abuse_window_seconds"] * 1000),
                                     ban_ms=int(peers["address_ban_seconds"] * 1000),
                                     ban_renew_factor=float(peers["address_ban_renew_factor"]),
                                     max_streams=peers["address_streams"], max_keys=peers["max_records"]),
        workers=peers["decode_workers"], work_queue=peers["decode_queue"], inline_bytes=peers["inline_bytes"],
        frame_timeout_s=float(peers["frame_timeout_seconds"]), sync_sessions=peers["sync_sessions"],
        sync_sessions_per_peer=peers["sync_sessions_per_peer"],
        container_limits=config.limits,
        sync_classes=list(sync["classes"]), sync_tags=list(sync["tags"]),
        sync_window_days=float(sync["window_days"]), min_trust=float(sync["min_trust"]),
        public_goals=bool(sync["public_goals"]),
        committee_dids=list(consensus["committee"]),
        **stranger_limits(config.values["limits"]),
        consensus_timeouts=Timeouts(propose_ms=consensus["propose_ms"], prevote_ms=consensus["prevote_ms"],
                                    precommit_ms=consensus["precommit_ms"], delta_ms=consensus["round_delta_ms"],
                                    resend_ms=consensus["resend_ms"],
                                    emergency_after_ms=int(consensus["emergency_seconds"] * 1000),
                                    request_batch_ms=consensus["request_batch_ms"]),
        consensus_block_limits=BlockLimits(values=consensus["block_values"], bytes=consensus["block_kib"] * 1024),
    )


async def run_node(config: Config, key: NodeKey, out: TextIO = sys.stdout) -> None:
    metrics = Metrics()
    llm.METRICS.set(metrics)  # every LLM call of this node (and the tasks it starts) is timed
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with await Store.open(config.db_path, metrics=metrics, hooks=gmp_store_hooks.install()) as store:
            await store.write(_heartbeat, "node", "started")
            a2a_blocks = BlockSet().fill(await store.read(a2a_block_rows))  # the A2A face's, changed by the actions
            cognition = config.values["cognition"]
            hooks = MeshHooks()  # the GMP service and the reactor subscribe as they are built
            validator = _PeerValidator(store, float(cognition["peer_validation_min_trust"])) \
                if cognition["enabled"] else None  # this node's validator LLM, lent to trusted peers
            on_hello = spawn_hello.parent_hook(store, key, config.limits.clock_skew_ms)  # a child's hello, parent side
            mesh = Mesh(key, net_config(config), store, metrics, hooks=hooks, validator=validator, on_hello=on_hello)
            web_address = WebAddress()  # filled in once the web server is bound (port 0 picks the port then)
            ticks = TickEvents()  # the cycle's ticks, heard by the web's feed (built after the cycle)
            reactor_service = _Later()  # the cycle's sends ask the reactor, whose service wakes the cycle
            app_later = _Later()  # the gate's spawns run the app's action, and the App needs the cycle
            switch_interval = None
            try:
                async with trio.open_nursery() as nursery:
                    _load_libp2p_modules()
                    freeze_startup_heap(metrics)  # full GC passes skip the startup heap: no ~0.1 s loop stalls
                    switch_interval = shorten_switch_interval(metrics)  # threads get the lock back sooner (base.gil)
                    await nursery.start(mesh.run)
                    gmp = MeshGmp(store, mesh, key, GmpSettings.from_config(config), metrics, hooks=hooks)
                    await nursery.start(gmp.run)
                    outside = mcp_tools_service.clients(config, bool(cognition["enabled"]))  # the agent's MCP tools
                    cycle = _cycle(store, key, mesh, cognition, config, metrics, outside=outside, on_tick=ticks.ended,
                                   on_live=ticks.live, send_limits=_wake_send_limits(config, key, metrics, reactor_service),
                                   spawner=_agent_spawner(app_later)) \
                        if cognition["enabled"] else None
                    if outside is not None:  # connected before the first tick
                        await nursery.start(outside.run)
                    if cycle is not None:
                        nursery.start_soon(cycle.run)
                    reactor = reactor_service.set(_reactor(config, key, store, mesh, hooks, metrics, cycle, ticks))
                    if reactor is not None:  # after the cycle: a wake needs its slot
                        await nursery.start(reactor.run)
                    await spawn_hello.start(nursery, config, key, store, mesh, metrics)  # a child's hello, child side
                    nursery.start_soon(FamilyKeeper(store, mesh, metrics, float(config.values["net"]["sync_seconds"])).run)
                    app = app_later.set(App(store, key, mesh=mesh, reactor=reactor, metrics=metrics, cycle=cycle,
                                            wake_on_message=bool(config.values["web"]["wake_on_message"]), gmp=gmp,
                                            jail=gate_setup.jail(config), mind_view=mind_view.view, config=config,
                                            spawner=SpawnJobs(), web=web_address, tools=TOOLS,
                                            a2a_blocks=a2a_blocks))
                    control = _Control(config, key, store, mesh, metrics, cycle, gmp, reactor, app)
                    await nursery.start(serve_control, socket_path(config.db_path.parent), control.handle)
                    if config.values["web"]["enabled"]:  # the notebook, /mcp, A2A: after the control socket
                        from meshnode.node.http import serve_http
                        from meshnode.faces.web.services import Services

                        services = Services(config, key, store, mesh, metrics, control, cycle, gmp, reactor)
                        ticks.on_ended(lambda summary: services.feed.nudge())  # a tick ended: the feed looks now
                        ticks.on_live(services.feed.live.hear)  # the answer as the LLM writes it: llm_token events
                        await nursery.start(serve_http, config, services, web_address, a2a_blocks)
                    print(f"did:      {key.did}", file=out)
                    print(f"peer id:  {key.peer_id}", file=out)
                    print(f"name:     {config.name}", file=out)
                    print(f"home:     {config.home}", file=out)
                    print(f"database: {config.db_path} (schema v{store.version})", file=out)
                    for addr in mesh.addresses():
                        print(f"listen:   {addr}", file=out)
                    if mesh.addresses():
                        print("to connect another node, add this line to its bootstrap.txt"
                              " (or another listen address above that it can reach):", file=out)
                        print(_bootstrap_example(mesh.addresses()), file=out)
                    if web_address.url is not None:
                        print(f"web:      {web_address.url}", file=out)
                        print("login:    meshnode web url", file=out)
                    print("ready; stop with Ctrl-C", file=out, flush=True)
                    async for signum in signals:
                        log.info("received %s, stopping", signal.Signals(signum).name)
                        break
                    nursery.cancel_scope.cancel()
            finally:
                if switch_interval is not None:
                    sys.setswitchinterval(switch_interval)  # a node run inside another program leaves it as found
                with trio.CancelScope(shield=True):
                    try:  # best effort, and quick: stopping must not wait on another process's lock
                        await store.write(_heartbeat, "node", "stopped", STOP_BUSY_TIMEOUT_MS)
                    except StoreError as exc:
                        log.warning("could not record the stop: %s", exc.reason)
    print("stopped", file=out, flush=True)


def cmd_run(args) -> int:
    """``meshnode run``: the CLI's parser names it here (the CLI never imports the node). It holds
    the home while it runs (store/home/running.py: no second node on one home, the pid file) and
    logs to the home's log file as well as stderr (base/node_log.py); ``--detached`` (what
    ``meshnode start`` runs) logs to the file only, its stderr being the console file."""
    config = config_of(args)
    key = open_identity(config)  # first: a home that is not one is refused before anything is written in it
    held = running.hold(config.home)
    try:
        log_settings = config.values["log"]
        handler = node_log.attach_file(config.home, log_settings["file_kib"] * 1024, log_settings["files"],
                                       detached=getattr(args, "detached", False))
        marks = node_log.file_only("meshnode.node.lifecycle", handler)  # the file's alone: stderr is as before
        marks.info("meshnode %s starting in %s (pid %d)", __version__, config.home, os.getpid())
        if held.stale_pid:
            marks.info("replaced the pid file of a node that is gone (pid %d)", held.stale_pid)
        try:
            trio.run(run_node, config, key, sys.stdout)  # this call's stdout (the default is the one at import)
        except BaseExceptionGroup as group:  # an expected failure inside a nursery: one line, not a traceback
            expected = _only(group, MeshnodeError)
            if expected is None:
                marks.critical("the node failed", exc_info=group)
                raise
            marks.error("the node stopped: %s", expected.reason)
            raise expected from None
        except MeshnodeError as exc:
            marks.error("the node stopped: %s", exc.reason)
            raise
        except Exception:
            marks.critical("the node failed", exc_info=True)
            raise
        marks.info("stopped")
    finally:
        held.remove_pid()  # the lock is dropped with the process: `meshnode stop` waits for its very end
    return 0


class _Later:
    """A part built after one that needs it, because each needs the other: handed over empty at
    construction, set once by the node when built (None if it is off)."""

    def __init__(self):
        self.value = None

    def set(self, value):
        self.value = value
        return value


def _bootstrap_example(addresses: list[str]) -> str:
    """The address another machine most likely reaches: the first not on loopback."""
    outside = [a for a in addresses if not a.startswith(("/ip4/127.", "/ip6/::1/"))]
    return (outside or addresses)[0]


class _PeerValidator:
    """This node's validator LLM as lent to trusted peers (net/mesh_exchange.py, op validate)."""

    def __init__(self, store, min_trust: float):
        self.store, self.min_trust = store, min_trust

    async def may_ask(self, did: str) -> bool:
        return await peer_validation.may_ask_us(self.store, did, self.min_trust)

    async def judge(self, prompt: str, answer: str) -> tuple[int, str]:
        return await peer_validation.judge(self.store, prompt, answer)


def _cycle(store, key: NodeKey, mesh: Mesh, cognition: dict, config: Config, metrics: Metrics | None = None, *,
           outside=None, on_tick=None, on_live=None, send_limits=None, spawner=None) -> Cycle:
    """The cognitive core, wired to the mesh: isolated mode when no peer is connected; trusted
    connected peers validate its answers, and it validates theirs. ``outside``: the MCP servers'
    clients of its outside tools (mcp_tools.service.clients); ``spawner``: the gate's ``spawn``."""
    min_trust = float(cognition["peer_validation_min_trust"])

    def connected() -> list[str]:
        return [peer_id_to_did(p.to_base58()) for p in mesh.host.get_connected_peers()] if mesh.host else []

    async def validators() -> list[tuple[str, float]]:
        return await peer_validation.pool(store, connected(), int(cognition["peer_validators"]), min_trust)

    async def tell_user(text: str) -> None:  # a private note from the system: the user's inbox, not the agent's
        await store.write(lambda db: write_note(db, key, actor.node("gate"), text, now_ms=now_ms(), tags=["gate"]))

    settings = gate_setup.settings(config)
    killed, removed = gate_setup.clear_leftovers(settings.scratch_dir)
    if killed:
        log.warning("killed %d sandboxed process(es) an earlier run of this node left running: pids %s",
                    len(killed), ", ".join(map(str, killed)))
    if removed:
        log.info("removed scratch copies left by an earlier run")
    gate = Gate(store, settings, now_ms, tell_user=tell_user, send_out=sending.approved(mesh, store, key, now_ms),
                spawner=spawner, mcp=mcp_tools_service.tools(outside, metrics) if outside is not None else None)
    return Cycle(store, key, now_ms, pause_s=float(cognition["pause_seconds"]),
                 recent_k=int(cognition["recent_responses"]), mesh_up=lambda: bool(connected()), mesh=mesh,
                 peer_validators=validators, peer_timeout_s=float(cognition["peer_validation_seconds"]),
                 processes=processes.Processes(store, gate, now_ms, float(config.values["gate"]["process_timeout_seconds"])),
                 gate=gate, tools=catalogue.tool_definitions() if config.values["gate"]["offer_tools"] else None,
                 validator_failures=int(cognition["validator_failures"]),
                 validator_retry_s=float(cognition["validator_retry_seconds"]), metrics=metrics,
                 keep_traces=int(cognition.get("keep_tick_traces", 200)), on_tick=on_tick, send_limits=send_limits,
                 on_live=on_live)


def _agent_spawner(app: _Later):
    """The gate's ``spawn``: the app's spawn action for the agent, once a person approved: its child
    node, started at once; the caller waits until it is made. ``app``: the node's App, set once built
    (after the cycle; the gate spawns only once the node runs)."""
    async def spawn(args: dict) -> dict:
        return await dispatch(app.value, actor.AGENT, "spawn", {"kind": args["kind"], "name": args.get("name"),
                                                                "start": True}, approved_by=actor.approver(None))
    return spawn


def _wake_send_limits(config: Config, key: NodeKey, metrics: Metrics, service: _Later):
    """What a woken agent may send (reactor/send_limits.py), checked before the gate's outbound
    level; None with ``[reactor] enabled = false``. ``service``: the reactor's, built after the cycle."""
    if not config.values["reactor"]["enabled"]:
        return None
    from meshnode.engines.reactor.send_limits import WakeSendLimits
    from meshnode.engines.reactor.service import reactor_config

    cfg = reactor_config(config.values["reactor"], key.did)
    return WakeSendLimits(key.did, cfg.max_outgoing_per_run, now_ms,
                          lambda: service.value.reactor if service.value is not None else None, metrics)


def _reactor(config: Config, key: NodeKey, store, mesh: Mesh, hooks: MeshHooks, metrics: Metrics,
             cycle: Cycle | None, ticks: TickEvents | None = None):
    """The reactor's driver (protocols/reactor.md 12.1), poked by every note or GMP container stored
    new, and told of the cycle's ticks (what they handled is settled); None with ``[reactor] enabled = false``."""
    if not config.values["reactor"]["enabled"]:
        return None
    from meshnode.engines.reactor.service import ReactorService, reactor_config

    service = ReactorService(store, key, reactor_config(config.values["reactor"], key.did), config.home, metrics,
                             cycle=cycle, mesh=mesh, committee=list(config.values["consensus"]["committee"]))
    hooks.on_stored(lambda c: service.poke())
    if ticks is not None:
        ticks.on_ended(service.tick_ended)
    return service


def _heartbeat(db, name: str, state: str, busy_timeout_ms: int | None = None) -> None:
    with db.transaction(busy_timeout_ms) as conn:
        conn.execute(
            "INSERT INTO main_process (name, heartbeat, stop) VALUES (?, ?, ?)"
            " ON CONFLICT (name) DO UPDATE SET heartbeat = excluded.heartbeat, stop = excluded.stop",
            (name, format_ms(now_ms()), int(state == "stopped")),
        )


class _Control:
    """Answers the control socket's requests (the CLI, ``meshnode mcp``, and the web's and A2A's
    calls in the node): each is an action of the application layer (meshnode.app.dispatch), run
    for whoever the face says asks; here only the plumbing: the arguments checked, each request
    counted and timed, and a bug answered as ``internal_error`` rather than taking the node down."""

    def __init__(self, config: Config, key: NodeKey, store: Store, mesh: Mesh, metrics: Metrics,
                 cycle: Cycle | None = None, gmp: MeshGmp | None = None, reactor=None, app: App | None = None,
                 web: WebAddress | None = None):
        self.metrics = metrics
        # the App the actions run on (a bare _Control for tests: one of the objects it was given)
        self.app = app or App(store, key, mesh=mesh, reactor=reactor, cycle=cycle, metrics=metrics, gmp=gmp,
                              config=config, web=web)

    async def handle(self, cmd: str, args: dict, face: str = "cli", actor: Actor | None = None):
        """``cmd`` for ``actor`` (by default the person, through ``face``)."""
        check_args(cmd, _strings(args))
        self.metrics.inc("control_requests", cmd=cmd)
        started = time.monotonic()
        try:
            return await dispatch(self.app, actor or person(face), cmd, args)
        except MeshnodeError:
            raise
        except Exception as exc:  # a bug must not take the node down with it: log it, answer, go on
            log.exception("control command %s failed", cmd)
            self.metrics.inc("control_internal_errors")
            raise MeshnodeError("internal_error", f"{cmd} failed inside the node: {type(exc).__name__}") from None
        finally:
            self.metrics.observe("control_request_seconds", time.monotonic() - started, cmd=cmd)


def _strings(args: dict) -> dict:
    """Control arguments are JSON: only plain values, nothing clever."""
    for k, v in args.items():
        if not isinstance(k, str) or not isinstance(v, (str, int, float, bool, list, type(None))):
            raise MeshnodeError("bad_request", f"argument {k!r} has an unsupported type")
    return args


def _load_libp2p_modules() -> None:
    """Import what py-libp2p imports only as the mesh starts, so that the startup heap frozen before
    the first connection (``base.heap``) holds those modules too."""
    import libp2p.kad_dht.kad_dht  # noqa: F401
    import libp2p.pubsub.gossipsub  # noqa: F401
    import libp2p.security.noise.transport  # noqa: F401
    import libp2p.stream_muxer.yamux.yamux  # noqa: F401
