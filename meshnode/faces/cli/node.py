"""The node's own commands: ``init``, ``status``, ``note add|list``, ``peers``, ``ping``,
``find``, ``send``, ``friend``, ``metrics`` and ``container show|verify|export`` (their parsers:
``meshnode.faces.cli``). ``run`` is the node's (``meshnode.node.run.cmd_run``): the parser names it there.

What only one command needs (the store's tables, note building, container checks) is imported
in that command, so ``status`` against a running node loads little beyond the config and the key.
"""

from __future__ import annotations

import base64
import getpass
import json
import os
import sys
from pathlib import Path

from meshnode.base.config import resolve_home
from meshnode.base.container.timefmt import now_ms
from meshnode.base.errors import MeshnodeError
from meshnode.store.home import init_home, open_identity, running
from meshnode.base.identity.keyfile import PASSPHRASE_ENV, key_file_is_encrypted
from meshnode.store.migrate import latest_version
from meshnode.faces.cli.mind import mcp_server_line
from meshnode.faces.cli.common import (NOT_RUNNING, _ask_node, act, _config, agent_did, agent_line, agents_named, container_did,
                                      load_names, name_of, print_json, print_rows, read_limited_file, terminal_safe, who)

MAX_CONTAINER_FILE = 64 * 1024 * 1024
NOTE_LINE = 100  # characters of a note's first line that `note list` shows


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
    from meshnode.engines.spawn.bundle import init_from_bundle

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


def cmd_status(args) -> int:
    """Who the node is, whether it runs (pid, uptime), where it listens, its peers by liveness, its agent,
    its web address and what waits for the person; with the node stopped, what its home last knew."""
    config = _config(args)
    key = open_identity(config)
    live = _ask_node(config, "status", required=False)
    answer = live if live is not None else act(config, "status", {})
    info = {"did": key.did, "peer_id": key.peer_id, "name": config.name, "home": str(config.home),
            "database": str(config.db_path), **answer, "running": live is not None, "schema_latest": latest_version()}
    if live is None:
        info["pid_file"] = pid_file_state(config.home)
    if args.json:
        print_json(info)
        return 0
    for k in ("did", "peer_id", "name", "home", "database"):
        print(terminal_safe(f"{k + ':':10} {info[k]}"))
    for line in status_lines(info, config, now_ms()):
        print(terminal_safe(line))
    print(f"{'schema:':10} v{info['schema_version']}")
    print(f"{'counts:':10} " + ", ".join(f"{k} {v}" for k, v in info["counts"].items()))
    if live is not None and (info.get("agent") or {"llms": 1}).get("llms"):  # with none, `agent:` said it all
        _print_mind(live.get("cognition") or {})
    return 0


def pid_file_state(home: Path) -> dict | None:
    """What the home's pid file says, judged by the home's lock (store.home.running): ``alive`` when a
    process holds the home (starting, or stuck: it does not answer), else the file is stale (a node
    killed: its pid may be a zombie's, or reused by another process); None with no pid file."""
    pid = running.read_pid(home)
    if pid is None:
        return None if not (home / running.PID_FILE).exists() else {"pid": None, "alive": False}
    return {"pid": pid, "alive": running.holder(home) is not None}


def status_lines(info: dict, config, now: int) -> list[str]:
    """The lines of ``status`` a person reads first: running or not, addresses, peers, agent, web, waiting."""
    lines = [f"{'running:':10} {_running(info, now)}"]
    if info["running"]:
        lines += [f"{'address:':10} {a}" for a in info.get("addresses") or ["(none yet)"]]
    counts = info.get("peer_counts") or {}
    shown = ", ".join(f"{counts.get(k, 0)} {k}" for k in ("ok", "quiet", "stale", "dead"))
    if info["running"]:
        connected = info.get("connected") or []
        lines.append(f"{'peers:':10} {shown}; {connected if isinstance(connected, int) else len(connected)} connected")
    else:
        lines.append(f"{'peers:':10} as last known: {shown} (`meshnode peers`)")
    lines.append(f"{'agent:':10} {_agent(info)}")
    lines.append(f"{'web:':10} {_web(info, config)}")
    lines.append(f"{'waiting:':10} {_waiting(info.get('waiting') or {})}")
    return lines


def _running(info: dict, now: int) -> str:
    if info["running"]:
        up = f", up {duration(info['uptime_seconds'])}" if info.get("uptime_seconds") is not None else ""
        return f"yes, pid {info.get('pid', '?')}{up}"
    run = info.get("last_run")
    text = "no"
    if run is None:
        text += " (it has never run)"
    elif run["stopped"]:
        text += f" (stopped {duration((now - run['at_ms']) // 1000)} ago)"
    else:
        text += f" (the last run started {duration((now - run['at_ms']) // 1000)} ago and did not stop cleanly)"
    pid = info.get("pid_file")
    if pid is not None and pid["pid"] is None:
        text += f"; {running.PID_FILE} names no pid"
    elif pid is not None:
        if pid["alive"]:
            text += f"; pid {pid['pid']} holds the home but does not answer: starting, or stuck"
        else:
            text += f"; {running.PID_FILE} names pid {pid['pid']}, which no longer runs this node (a stale file)"
    return text + ("" if pid is not None and pid["alive"] else "; start it with `meshnode start`")


def _agent(info: dict) -> str:
    agent = info.get("agent") or {}
    if not agent.get("enabled", True):
        return "off ([cognition] enabled = false in config.toml)"
    if not agent.get("llms"):
        return ("off — `meshnode llm add NAME --url http://127.0.0.1:11434/v1 --model MODEL` turns it on")
    llms = f"{agent['llms']} LLM{'s' if agent['llms'] != 1 else ''}"
    if not info["running"]:
        return f"{llms} registered; it thinks while the node runs"
    mind = info.get("cognition") or {}
    return f"{mind.get('mode', 'off')} ({llms}{', paused by ' + mind['paused_by'] if mind.get('paused') else ''})"


def _web(info: dict, config) -> str:
    web = config.values["web"]
    if not web["enabled"]:
        return "off ([web] enabled = false)"
    if info["running"]:
        return f"{info.get('web') or 'starting'} (`meshnode web url` prints the login link)"
    return f"not served (the node is stopped); it will listen on {web['listen']}"


# every kind of records.inbox.KINDS but drafts_accepted (said apart below), as a person names it
_WAITING = (("confirmation", "confirmation"), ("held_command", "held command"), ("draft", "draft"),
            ("a2a_message", "held A2A message"), ("escalation", "escalation"), ("notice", "notice"),
            ("task_unclaimed", "unclaimed task"))


def _waiting(waiting: dict) -> str:
    by_kind = waiting.get("by_kind") or {}
    parts = [f"{by_kind[k]} {label}{'s' if by_kind[k] != 1 else ''}" for k, label in _WAITING if by_kind.get(k)]
    if by_kind.get("drafts_accepted"):
        parts.append("accepted drafts to commit")
    return (", ".join(parts) + " (`meshnode inbox`)") if parts else "nothing"


def duration(seconds: int) -> str:
    """``3d 4h``, ``2h 5m``, ``7m 3s``, ``12s``: the two largest units."""
    seconds = max(0, int(seconds))
    units = [(n, u) for n, u in ((seconds // 86400, "d"), (seconds % 86400 // 3600, "h"),
                                 (seconds % 3600 // 60, "m"), (seconds % 60, "s"))]
    while len(units) > 1 and units[0][0] == 0:
        units.pop(0)
    return " ".join(f"{n}{u}" for n, u in units[:2])


def _print_mind(mind: dict) -> None:
    """The running agent's details that call for a person: each LLM that did not answer, a spent
    budget of tool calls, held commands, validators set aside, the outside tools' servers."""
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
        print(terminal_safe(f"{'mcp:':10} {mcp_server_line(s)}"))


def cmd_note_add(args) -> int:
    text = args.text if args.file is None and args.text != "-" else _note_text(args.file)
    config = _config(args)
    if args.reply_to:  # a short id (from `note list`) names the whole DID
        args.reply_to = container_did(config, args.reply_to, "note")
    tags = [x.strip() for x in (args.tags or "").split(",") if x.strip()]
    out = act(config, "note_add", {"text": text, "topic": args.topic, "audience": args.audience,
                                   "priority": args.priority, "tags": tags, "forward": args.forward,
                                   **({"reply_to": args.reply_to} if args.reply_to else {})})
    print(out["did"])
    sent = out.get("sent") or {}
    if sent.get("by") == "push":  # too large for one gossip message (net.mesh_publish)
        peers = len(sent["pushed"]) + len(sent["failed"]) + len(sent["later"])
        rest = "" if len(sent["pushed"]) == peers else "; the others get it at their next sync"
        print(f"meshnode: {sent['bytes']} bytes, too large for gossip (at most {sent['gossip_max']}): sent by"
              f" direct push to {len(sent['pushed'])} of {peers} connected peers{rest}", file=sys.stderr)
    return 0


def _note_text(path: str | None) -> str:
    """A note's text from a UTF-8 file, or standard input (``path`` None), at most a note's
    size (domain.notes.MAX_TEXT bytes): larger is refused with the limit, not cut."""
    from meshnode.domain.notes import MAX_TEXT

    where = path or "standard input"
    too_long = MeshnodeError("note_too_long", f"{where} holds more than a note's {MAX_TEXT} bytes (64 KiB):"
                                              " split it in parts")
    if path is None:
        data = sys.stdin.buffer.read(MAX_TEXT + 1)
    else:
        try:
            data = read_limited_file(Path(path), MAX_TEXT)
        except MeshnodeError as exc:
            if exc.code == "file_too_large":
                raise too_long from None
            raise
    if len(data) > MAX_TEXT:
        raise too_long
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise MeshnodeError("bad_note", f"{where} is not UTF-8 text") from None


def cmd_note_list(args) -> int:
    config = _config(args)
    before = container_did(config, args.before, "note") if args.before else None
    rows = act(config, "notes", {"limit": args.limit, "before": before, "query": args.search,
                                 "unread": args.unread, "source": args.source, "topic": args.topic})
    if rows and not args.json:
        load_names(config)
    print_rows(args, rows, _note_line)
    return 0


def _note_line(r: dict) -> str:
    """One note: its short id (for ``note read``), when, who wrote it, to whom, what."""
    from meshnode.store.short_ids import short_container_id

    topic = f"({r['topic']}) " if r["topic"] else ""
    unread = "" if r.get("read", True) else "*"
    first = r["text"].splitlines()[0][:NOTE_LINE] if r["text"] else ""
    more = " ..." if len(first) < len(r["text"].rstrip()) else ""  # the rest: `note read`
    return (f"{short_container_id(r['container_did'])}{unread:1} {r['timestamp'][:19]}  "
            f"{_writer(r)} -> {r['audience']}  {topic}{first}{more}")


def _writer(r: dict) -> str:
    """Who wrote a note: a peer by its name (or DID); this node's own by who asked it to (the
    person through a face, the agent, an A2A party, the node itself), from store.provenance."""
    kind = r.get("asked_kind")
    if kind is None or kind == "peer":
        return who(r.get("author_did"), r.get("author_name"))
    from meshnode.app.actor import described

    return described(kind, r.get("asked_via"), r.get("asked_label"), r.get("asked_id"))




def cmd_peers(args) -> int:
    """The peers this node knows. With the node stopped, what it last knew, said as such: a line on
    stderr, liveness aged by the silence since each was heard, nobody online or connected, exit 3."""
    config = _config(args)
    rows = _ask_node(config, "peers", {}, required=False)
    running = rows is not None
    if not running:
        rows = act(config, "peers", {})
        print("meshnode: the node is not running: peers as last known (start it with `meshnode start`)",
              file=sys.stderr)
    now = now_ms()
    if rows and not args.json:
        load_names(config)  # the name column: the person's petname, else the announced name (store.names)
        print(f"{'name':16} {'liveness':8} {'status':8} {'conn':4}  {'heard':9}  did")
    print_rows(args, rows, lambda r: f"{name_of(r['did'], r['name'])[:16]:16} {(r['liveness'] or '-'):8} "
                                     f"{(r['status'] or '-'):8} {'yes' if r.get('connected') else '-':4}  "
                                     f"{ago(r.get('last_heard_ms'), now):9}  {r['did']}")
    return 0 if running else NOT_RUNNING


def ago(ms: int | None, now: int) -> str:
    """How long ago ``ms`` was: ``3h ago``; ``never`` for None."""
    return "never" if ms is None else f"{duration((now - int(ms)) // 1000).split()[0]} ago"


def cmd_ping(args) -> int:
    config = _config(args)
    did = agent_did(config, args.did)
    result = _ask_node(config, "ping", {"did": did})
    load_names(config)
    print(f"{who(result['did'])}: {result['rtt_ms']:.2f} ms")
    return 0


def cmd_find(args) -> int:
    config = _config(args)
    if bool(args.did) == bool(args.interest):
        print("meshnode: find takes a DID or --interest TAG", file=sys.stderr)
        return 2
    if args.interest:
        rows = _ask_node(config, "find", {"interest": args.interest})
        if args.json:
            names = {n["did"]: n["name"] for n in agents_named(config, [r["did"] for r in rows])}
            rows = [{**r, "name": names.get(r["did"])} for r in rows]
        elif rows:
            load_names(config)
        print_rows(args, rows, lambda r: agent_line(r["did"]))
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
    for did in result.get("pending", []):  # GMP: held aside until the peer fetched what it names
        print(f"held aside {did} (it names containers the peer lacks; the peer fetches them)")
    for r in result["rejected"]:
        print(f"rejected ({r['code']}): {r['reason']}")
    return 1 if result["rejected"] else 0


def cmd_friend(args) -> int:
    config = _config(args)
    did = agent_did(config, args.did)
    act(config, "friend", {"did": did, "on": args.friend_on})
    load_names(config)
    print(terminal_safe(f"{'friend' if args.friend_on else 'no longer a friend'}: {who(did)} ({did})"))
    return 0


def cmd_friend_list(args) -> int:
    """Friends by name, in its order (``--did``: whole DIDs first); ``--json``: ``[{did, name}]``."""
    config = _config(args)
    dids = act(config, "friends", {})
    if args.json:
        print_json(agents_named(config, dids))
        return 0
    if dids:
        load_names(config)
    print_rows(args, sorted(dids, key=lambda d: name_of(d).casefold()), agent_line)
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
    from meshnode.base.container import ContainerError, decode_container

    data = read_limited_file(args.file, MAX_CONTAINER_FILE)
    try:
        c = decode_container(data, now_ms=now_ms(), limits=_file_limits(args))
    except ContainerError as exc:
        print(f"invalid ({exc.code}): {exc.reason}", file=sys.stderr)
        return 1
    print(terminal_safe(json.dumps(c.to_plain(), indent=2, ensure_ascii=False), keep_newlines=True))
    return 0


def cmd_container_verify(args) -> int:
    from meshnode.base.container import ContainerError, decode_container

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
    data = bytes.fromhex(act(config, "export", {"did": did})["hex"])  # not_found when it is not held here
    try:
        args.file.write_bytes(data)
    except OSError as exc:
        raise MeshnodeError("unwritable_file", f"{args.file}: {exc.strerror}") from None
    print(f"wrote {len(data)} bytes to {args.file}")
    return 0


def _file_limits(args):
    """Limits from the config when a home is given; the defaults otherwise."""
    if getattr(args, "home", None) is None and not (resolve_home(None) / "config.toml").exists():
        from meshnode.base.container.model import DEFAULT_LIMITS

        return DEFAULT_LIMITS
    return _config(args).limits
