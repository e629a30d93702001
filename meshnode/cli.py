"""The ``meshnode`` command line.

Exit codes: 0 ok, 1 runtime error (one clear line on stderr, no traceback),
2 usage error. Every command takes ``--home DIR`` (or $MESHNODE_HOME), before
or after the command name.
"""

from __future__ import annotations

import argparse
import base64
import getpass
import json
import os
import sys
from pathlib import Path

import trio

from meshnode import __version__
from meshnode.config import resolve_home
from meshnode.container import DEFAULT_LIMITS, ContainerError, decode_container, now_ms
from meshnode.errors import MeshnodeError
from meshnode.home import init_home, open_identity
from meshnode.identity.keyfile import PASSPHRASE_ENV, key_file_is_encrypted
from meshnode.notes import AUDIENCES, SOURCES, make_note
from meshnode.chat import reply_topic
from meshnode.store import latest_version
from meshnode.identity.did import did_to_peer_id
from meshnode.spawn.model import AUTOSTARTS
from meshnode.store.peers import list_peers
from meshnode.store.sharing import friends, set_friend
from meshnode.cli_common import (_ask_node, _config, _open_db, agent_did, container_did, describe, print_json,
                                 print_rows, read_limited_file, terminal_safe, who)
from meshnode.store.short_ids import short_container_id
from meshnode import cli_consensus, cli_gate, cli_knowledge, cli_llm, cli_mind, cli_reputation
from meshnode import cli_ethics, cli_gmp, cli_reactor
from meshnode import cli_web
from meshnode import cli_a2a
from meshnode import cli_chat
from meshnode import cli_spawn
from meshnode import cli_children
from meshnode import cli_mcp

MAX_CONTAINER_FILE = 64 * 1024 * 1024
NOTE_LINE = 100  # characters of a note's first line that `note list` shows


_PEER = "the peer: its DID (did:key:...), its name, or its short id (key:...)"


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--home", default=argparse.SUPPRESS,
                        help="the node's home directory (default: $MESHNODE_HOME or ~/.meshnode)")
    common.add_argument("--db", default=argparse.SUPPRESS, help="database path (overrides [store] path)")
    common.add_argument("--key-file", default=argparse.SUPPRESS, help="key file path (overrides [keys] path)")
    common.add_argument("--log-level", default=argparse.SUPPRESS, choices=("debug", "info", "warning", "error"),
                        help="how much the node logs to stderr (overrides [log] level)")

    parser = argparse.ArgumentParser(prog="meshnode", parents=[common],
                                     description="A HyperCortex Mesh Protocol node.")
    parser.add_argument("--version", action="version", version=f"meshnode {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("init", parents=[common], help="create the node's home, key and database")
    p.add_argument("--name", help="the node's display name (default: the home folder's name)")
    p.add_argument("--encrypt", action="store_true",
                   help="encrypt the key file with a passphrase ($MESHNODE_KEY_PASSPHRASE or a prompt)")
    p.add_argument("--exist-ok", action="store_true", help="succeed (and change nothing) if already initialised")
    p.add_argument("--from-bundle", metavar="FILE", help="become a child of the node that wrote this bundle"
                   " (meshnode spawn --bundle): its store, config and invitation; the key is made here")
    p.add_argument("--autostart", choices=AUTOSTARTS, default="none", help="with --from-bundle: how the child"
                   " starts with the host (default none)")
    p.add_argument("--start", action="store_true", help="with --from-bundle: start the child now")
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("run", parents=[common], help="run the node until SIGINT/SIGTERM",
                       epilog="It prints its DID, its addresses and the line another node puts in its\n"
                              "bootstrap.txt to connect to it.")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("status", parents=[common], help="who this node is and what it holds")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_status)

    note = sub.add_parser("note", parents=[common], help="the notebook").add_subparsers(
        dest="note_command", required=True, metavar="SUBCOMMAND")
    p = note.add_parser("add", parents=[common], help="write a signed note",
                        epilog="example: meshnode note add 'lunch at noon #food @bob' --audience friends")
    p.add_argument("text", help="the note (#hashtags and @mentions in it are indexed)")
    p.add_argument("--topic", help="a topic line")
    p.add_argument("--tags", help="comma-separated local tags (kept on this node only)")
    p.add_argument("--audience", choices=AUDIENCES, default="private",
                   help="private: this node only; friends: sent to friends; public: gossiped to everyone")
    p.add_argument("--source", choices=SOURCES, default="cli", help="who wrote it (default cli)")
    p.add_argument("--priority", type=int, default=0, help="higher is more urgent (default 0)")
    p.add_argument("--forward", type=int, choices=(0, 1, 2), default=0,
                   help="a friends note may travel this many hops past its recipients, friend to friend")
    p.add_argument("--reply-to", metavar="NOTE", help="the note this one answers (its thread's topic unless --topic)")
    p.set_defaults(func=cmd_note_add)
    p = note.add_parser("list", parents=[common], help="recent notes: short id (* unread), time, author -> audience, text",
                        epilog="`meshnode note read ID` shows one in full (ID: the short id in the first column)")
    p.add_argument("--limit", type=int, default=20, help="at most this many (default 20)")
    p.add_argument("--before", metavar="NOTE", help="the next page: the notes older than this one (its short id)")
    p.add_argument("--search", metavar="TEXT", help="only notes whose text or topic contains TEXT")
    read = p.add_mutually_exclusive_group()
    read.add_argument("--unread", action="store_true", default=None, help="only unread notes")
    read.add_argument("--read", dest="unread", action="store_false", help="only notes already read")
    p.add_argument("--source", choices=SOURCES, help="only notes from this source (cli, user: the person)")
    p.add_argument("--topic", help="only notes with exactly this topic")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_note_list)
    cli_knowledge.add_note_parsers(note, common)
    cli_knowledge.add_parsers(sub, common)
    cli_reputation.add_parsers(sub, common)
    cli_consensus.add_parsers(sub, common)
    cli_llm.add_parsers(sub, common)
    cli_mind.add_parsers(sub, common)
    cli_gate.add_parsers(sub, common)
    cli_ethics.add_parsers(sub, common)
    cli_gmp.add_parsers(sub, common)
    cli_reactor.add_parsers(sub, common)
    cli_web.add_parsers(sub, common)
    cli_a2a.add_parsers(sub, common)
    cli_chat.add_parsers(sub, common)
    cli_spawn.add_parsers(sub, common)
    cli_children.add_parsers(sub, common)
    cli_mcp.add_parsers(sub, common)

    p = sub.add_parser("peers", parents=[common], help="known peers with liveness")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_peers)
    p = sub.add_parser("ping", parents=[common], help="round trip to a peer (needs a running node)")
    p.add_argument("did", metavar="PEER", help=_PEER)
    p.set_defaults(func=cmd_ping)
    p = sub.add_parser("find", parents=[common], help="find a peer by DID, or peers by interest (needs a running node)",
                       epilog="examples: meshnode find did:key:z6Mk...   meshnode find --interest chemistry")
    p.add_argument("did", nargs="?", metavar="PEER", help=_PEER)
    p.add_argument("--interest", help="an interest tag instead of a DID")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_find)
    p = sub.add_parser("send", parents=[common], help="push a container file to a peer (needs a running node)")
    p.add_argument("did", metavar="PEER", help=_PEER)
    p.add_argument("file", type=Path, help="a container file (e.g. from `meshnode container export`)")
    p.set_defaults(func=cmd_send)
    friend = sub.add_parser("friend", parents=[common], help="friends: who gets your friends notes").add_subparsers(
        dest="friend_command", required=True, metavar="SUBCOMMAND")
    for name, helptext in (("add", "make a peer a friend"), ("remove", "stop sharing friends notes with a peer")):
        p = friend.add_parser(name, parents=[common], help=helptext)
        p.add_argument("did", metavar="PEER", help=_PEER)
        p.set_defaults(func=cmd_friend, friend_on=(name == "add"))
    p = friend.add_parser("list", parents=[common], help="list friends")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_friend_list)
    p = sub.add_parser("metrics", parents=[common], help="the running node's counters, gauges and timings (count and sum)")
    p.set_defaults(func=cmd_metrics)

    cont = sub.add_parser("container", parents=[common], help="inspect container files").add_subparsers(
        dest="container_command", required=True, metavar="SUBCOMMAND")
    p = cont.add_parser("show", parents=[common], help="print a container file as JSON (exit 1 if it does not verify)")
    p.add_argument("file", type=Path, help="the container file")
    p.set_defaults(func=cmd_container_show)
    p = cont.add_parser("verify", parents=[common], help="verify a container file; exit 1 if invalid")
    p.add_argument("file", type=Path, help="the container file")
    p.set_defaults(func=cmd_container_verify)
    p = cont.add_parser("export", parents=[common], help="write a stored container to a file")
    p.add_argument("did", metavar="CONTAINER", help="its container DID or short id")
    p.add_argument("file", type=Path, help="where to write it")
    p.set_defaults(func=cmd_container_export)
    describe(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        try:
            return _run(argv)
        finally:  # also after --help or a usage error (SystemExit)
            sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _reader_left()


def _run(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    os.umask(0o077)  # everything a node writes (database, notes, config) is its owner's alone
    try:
        return args.func(args) or 0
    except MeshnodeError as exc:
        print(f"meshnode: {exc.reason}", file=sys.stderr)
        return 1


def _reader_left() -> int:
    """The reader of our output went away (``meshnode note list | head -3``): end quietly
    with the shell's code for SIGPIPE. What is still buffered goes to /dev/null, so the
    interpreter's own flush at exit cannot complain either."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 141


# --- helpers -----------------------------------------------------------------


# --- commands ----------------------------------------------------------------


def cmd_init(args) -> int:
    home = resolve_home(getattr(args, "home", None))
    if args.from_bundle:
        return _init_from_bundle(args, home)
    overrides = {"store": {"path": getattr(args, "db", None)}, "keys": {"path": getattr(args, "key_file", None)}}
    passphrase = None
    if args.encrypt:
        passphrase = os.environ.get(PASSPHRASE_ENV)
        if not passphrase:
            if not sys.stdin.isatty():
                raise MeshnodeError("passphrase_needed", f"--encrypt needs ${PASSPHRASE_ENV} or a terminal")
            passphrase = getpass.getpass("new passphrase: ")
            if passphrase != getpass.getpass("again: "):
                raise MeshnodeError("passphrase_mismatch", "the two passphrases differ")
        if len(passphrase) < 8:
            raise MeshnodeError("weak_passphrase", "use a passphrase of at least 8 characters")
    config, result = init_home(home, name=args.name, passphrase=passphrase, exist_ok=args.exist_ok,
                               overrides=overrides)
    state = "created" if result.created_key else "already initialised"
    encrypted = key_file_is_encrypted(config.key_path)
    print(f"{state}: {config.home}")
    print(f"did:     {result.key.did}")
    print(f"peer id: {result.key.peer_id}")
    print(f"key:     {config.key_path} ({'encrypted' if encrypted else 'not encrypted'})")
    if args.encrypt and not result.created_key and not encrypted:
        print("meshnode: the existing key was kept as it is (not encrypted); --encrypt applies to new keys",
              file=sys.stderr)
    return 0


def _init_from_bundle(args, home: Path) -> int:
    """``init --from-bundle``: the key is written as ``init`` writes it here (${PASSPHRASE_ENV} set: encrypted)."""
    from meshnode.spawn.bundle import init_from_bundle

    if args.encrypt and not os.environ.get(PASSPHRASE_ENV):
        raise MeshnodeError("passphrase_needed", f"--encrypt with --from-bundle needs ${PASSPHRASE_ENV}")
    made = init_from_bundle(Path(args.from_bundle), home, name=args.name, autostart=args.autostart, start=args.start,
                            now_ms=now_ms())
    print(f"created: {made['home']}")
    print(f"did:     {made['did']}")
    print(f"parent:  {made['parent']} ({made['kind']}, depth {made['depth']})")
    for address in made["listen"]:
        print(f"listen:  {address}")
    print(f"hello:   pending: the child introduces itself to its parent when it runs (invitation valid until"
          f" {made['expires']})")
    if made["autostart"].get("hint"):
        print(f"autostart: {made['autostart']['hint']}")
    if made["started"]:
        print(f"started: {made.get('launch', {}).get('via', '')} (log {made.get('launch', {}).get('log', '')})")
    return 0


def cmd_run(args) -> int:
    from meshnode.node import run_node  # the node's modules (libp2p, the cognition) load only to run one

    config = _config(args)
    key = open_identity(config)
    try:
        trio.run(run_node, config, key, sys.stdout)  # this call's stdout (the default is the one at import)
    except BaseExceptionGroup as group:  # an expected failure inside a nursery: one line, not a traceback
        expected = _only(group, MeshnodeError)
        if expected is None:
            raise
        raise expected from None
    return 0


def _only(group: BaseExceptionGroup, kind: type) -> BaseException | None:
    """The first leaf of ``group`` if every leaf is a ``kind``, else None."""
    leaves, stack = [], [group]
    while stack:
        exc = stack.pop()
        if isinstance(exc, BaseExceptionGroup):
            stack.extend(exc.exceptions)
        else:
            leaves.append(exc)
    return leaves[0] if leaves and all(isinstance(e, kind) for e in leaves) else None


def cmd_status(args) -> int:
    config = _config(args)
    key = open_identity(config)
    live = _ask_node(config, "status", required=False)
    if live is not None:
        counts, version = live["counts"], live["schema_version"]
    else:
        db = _open_db(config)
        try:
            counts = db.counts()
            version = db.version
        finally:
            db.close()
    info = {"did": key.did, "peer_id": key.peer_id, "name": config.name, "home": str(config.home),
            "database": str(config.db_path), "schema_version": version, "schema_latest": latest_version(),
            "counts": counts, "running": live is not None}
    if live is not None:
        info.update(addresses=live["addresses"], connected=live["connected"], cognition=live.get("cognition"))
    if args.json:
        print_json(info)
    else:
        for k in ("did", "peer_id", "name", "home", "database"):
            print(f"{k + ':':10} {info[k]}")
        print(f"{'schema:':10} v{version}")
        print(f"{'counts:':10} " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        if live is not None:
            mind = live.get("cognition", {})
            print(f"{'mind:':10} {mind.get('mode')}" + (f" ({mind['hint']})" if mind.get("hint") else ""))
            for llm in [x for x in mind.get("llms") or [] if x.get("error")]:  # each LLM that did not answer, why
                print(terminal_safe(f"{'':10} llm {llm['id']} ({llm['model']} at {llm['url']}): {llm['error']}"))
            calls = mind.get("tool_calls") or {}
            if calls and calls["used"] >= calls["max"]:
                print(f"{'gate:':10} the agent used its {calls['max']} tool calls for this piece of work;"
                      " `meshnode gate reset-limit` lets it go on")
            held = mind.get("held") or {}
            if held.get("count"):  # a stall must be visible: what waits, and why
                print(terminal_safe(f"{'held:':10} {held['count']} command(s), newest: {held['reason']}"
                                    " (`meshnode mind held`, then release or drop)"))
            for name, f in (mind.get("validators_failing") or {}).items():
                if f.get("set_aside"):
                    print(terminal_safe(f"{'validator:':10} {name} set aside after {f['failures_in_row']} failures"
                                        f" in a row ({f['last_error']}); asked again later"))
            for s in mind.get("mcp_servers") or []:  # the agent's outside tools ([mcp.servers])
                state = f"{len(s['tools'])} tools" if s["status"] == "up" else s.get("error") or s["status"]
                print(terminal_safe(f"{'mcp:':10} {s['server']} {s['status']} ({state}"
                                    f"{', sandboxed' if s.get('sandboxed') else ''})"))
    return 0


def cmd_note_add(args) -> int:
    config = _config(args)
    if args.reply_to:  # a short id (from `note list`) names the whole DID
        args.reply_to = container_did(config, args.reply_to, "note")
    tags = [x.strip() for x in (args.tags or "").split(",") if x.strip()]
    live = _ask_node(config, "note_add", {"text": args.text, "topic": args.topic, "audience": args.audience,
                                          "source": args.source, "priority": args.priority, "tags": tags,
                                          "forward": args.forward,
                                          **({"reply_to": args.reply_to} if args.reply_to else {})},
                     required=False)
    if live is not None:  # the running node writes it (and gossips a public note)
        print(live["did"])
        return 0
    key = open_identity(config)
    t = now_ms()
    db = _open_db(config)
    try:
        recipients = friends(db) if args.audience == "friends" else None
        topic = args.topic or (reply_topic(db, args.reply_to) if args.reply_to else None)
        note = make_note(key, args.text, now_ms=t, topic=topic, source=args.source,
                         audience=args.audience, priority=args.priority, recipients=recipients,
                         forward=args.forward, reply_to=args.reply_to)
        db.put_container(note, received_at_ms=t, local={"tags": tags})
    finally:
        db.close()
    print(note.did)
    return 0


def cmd_note_list(args) -> int:
    config = _config(args)
    before = container_did(config, args.before, "note") if args.before else None
    options = {"before": before, "query": args.search, "unread": args.unread, "source": args.source,
               "topic": args.topic}
    rows = _ask_node(config, "notes", {"limit": args.limit, **options}, required=False)
    if rows is None:
        db = _open_db(config)
        try:
            rows = db.recent_notes(args.limit, **options)
        finally:
            db.close()
    print_rows(args, rows, _note_line)
    return 0


def _note_line(r: dict) -> str:
    """One note: its short id (for ``note read``), when, who wrote it, to whom, what."""
    topic = f"({r['topic']}) " if r["topic"] else ""
    unread = "" if r.get("read", True) else "*"
    first = r["text"].splitlines()[0][:NOTE_LINE] if r["text"] else ""
    more = " ..." if len(first) < len(r["text"].rstrip()) else ""  # the rest: `note read`
    return (f"{short_container_id(r['container_did'])}{unread:1} {r['timestamp'][:19]}  "
            f"{who(r.get('author_did'), r.get('author_name'))} -> {r['audience']}  {topic}{first}{more}")


def cmd_peers(args) -> int:
    config = _config(args)
    rows = _ask_node(config, "peers", required=False)
    if rows is None:  # the node is not running: what it last knew
        db = _open_db(config)
        try:
            rows = list_peers(db)
        finally:
            db.close()
    if rows and not args.json:
        print(f"{'name':16} {'liveness':8} {'status':8} {'conn':4}  did")
    print_rows(args, rows, lambda r: f"{(r['name'] or '-')[:16]:16} {(r['liveness'] or '-'):8} "
                                     f"{(r['status'] or '-'):8} {'yes' if r.get('connected') else '-':4}  {r['did']}")
    return 0


def cmd_ping(args) -> int:
    config = _config(args)
    did = agent_did(config, args.did)
    result = _ask_node(config, "ping", {"did": did})
    print(f"{did}: {result['rtt_ms']:.2f} ms")
    return 0


def cmd_find(args) -> int:
    config = _config(args)
    if bool(args.did) == bool(args.interest):
        print("meshnode: find takes a DID or --interest TAG", file=sys.stderr)
        return 2
    if args.interest:
        rows = _ask_node(config, "find", {"interest": args.interest})
        print_rows(args, rows, lambda r: r["did"])
        return 0
    result = _ask_node(config, "find", {"did": agent_did(config, args.did)})
    if args.json:
        print_json(result)
        return 0
    lines = [f"did:       {result['did']}", f"peer id:   {result['peer_id']}",
             f"name:      {result.get('name') or '(no announce)'}",
             f"connected: {'yes' if result.get('connected') else 'no'} ({result.get('elapsed_ms', 0):.0f} ms)"]
    lines += [f"address:   {addr}" for addr in result.get("addresses") or ["(none)"]]
    print(terminal_safe("\n".join(lines), keep_newlines=True))
    return 0


def cmd_send(args) -> int:
    config = _config(args)
    data = read_limited_file(args.file, MAX_CONTAINER_FILE)
    result = _ask_node(config, "send", {"did": agent_did(config, args.did),
                                        "container": base64.b64encode(data).decode("ascii")})
    for did in result["accepted"]:
        print(f"accepted {did}")
    for did in result["duplicates"]:
        print(f"already there {did}")
    for r in result["rejected"]:
        print(f"rejected ({r['code']}): {r['reason']}")
    return 1 if result["rejected"] else 0


def cmd_friend(args) -> int:
    config = _config(args)
    did = agent_did(config, args.did)
    peer_id = did_to_peer_id(did)
    if _ask_node(config, "friend", {"did": did, "on": args.friend_on}, required=False) is None:
        db = _open_db(config)
        try:
            set_friend(db, did, peer_id, now_ms(), args.friend_on)
        finally:
            db.close()
    print(f"{'friend' if args.friend_on else 'no longer a friend'}: {did}")
    return 0


def cmd_friend_list(args) -> int:
    config = _config(args)
    rows = _ask_node(config, "friends", required=False)
    if rows is None:
        db = _open_db(config)
        try:
            rows = friends(db)
        finally:
            db.close()
    print_rows(args, rows, str)
    return 0


def cmd_metrics(args) -> int:
    config = _config(args)
    full = _ask_node(config, "metrics", {"full": True})

    def line(name: str, labels: dict, value) -> None:
        inside = ",".join(f"{k}={v}" for k, v in labels.items())
        print(f"{name}{'{' + inside + '}' if inside else ''} {value}")

    for m in full["counters"]:  # counters first, as before; then gauges; then each histogram's count and sum
        line(m["name"], m["labels"], m["value"])
    for g in full["gauges"]:
        line(g["name"], g["labels"], g["value"])
    for h in full["histograms"]:
        line(h["name"] + "_count", h["labels"], h["count"])
        line(h["name"] + "_sum", h["labels"], round(h["sum"], 6))
    return 0


def cmd_container_show(args) -> int:
    data = read_limited_file(args.file, MAX_CONTAINER_FILE)
    try:
        c = decode_container(data, now_ms=now_ms(), limits=_file_limits(args))
    except ContainerError as exc:
        print(f"invalid ({exc.code}): {exc.reason}", file=sys.stderr)
        return 1
    print(terminal_safe(json.dumps(c.to_plain(), indent=2, ensure_ascii=False), keep_newlines=True))
    return 0


def cmd_container_verify(args) -> int:
    data = read_limited_file(args.file, MAX_CONTAINER_FILE)
    try:
        c = decode_container(data, now_ms=now_ms(), limits=_file_limits(args))
    except ContainerError as exc:
        print(f"invalid ({exc.code}): {exc.reason}")
        return 1
    flags = (" expired" if c.expired else "") + ("" if c.known_class else " unknown-class")
    print(f"ok {c.did} {c.cls} from {c.sender_did}{flags}")
    return 0


def cmd_container_export(args) -> int:
    config = _config(args)
    did = container_did(config, args.did)
    live = _ask_node(config, "export", {"did": did}, required=False)
    if live is not None:
        data = bytes.fromhex(live["hex"])
    else:
        db = _open_db(config)
        try:
            data = db.get_container_bytes(did)
        finally:
            db.close()
    if data is None:
        raise MeshnodeError("not_found", f"no container {did} in this node's store")
    try:
        args.file.write_bytes(data)
    except OSError as exc:
        raise MeshnodeError("unwritable_file", f"{args.file}: {exc.strerror}") from None
    print(f"wrote {len(data)} bytes to {args.file}")
    return 0


def _file_limits(args):
    """Limits from the config when a home is given; the defaults otherwise."""
    if getattr(args, "home", None) is None and not (resolve_home(None) / "config.toml").exists():
        return DEFAULT_LIMITS
    return _config(args).limits


if __name__ == "__main__":
    sys.exit(main())
