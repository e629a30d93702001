"""CLI commands for the notebook's local side and CogSync knowledge:
``note read|show|tag``, ``diary add|list``, ``concept add|list``, ``link add|list``, ``search``, ``sync``.

Each works on the running node when there is one (so new knowledge reaches the
mesh at the next sync) and on the database directly otherwise.
"""

from __future__ import annotations

import argparse

from meshnode import cli_edits, knowledge
from meshnode.cli_common import (_ask_node, _config, agent_did, container_did, live_or_local, print_json, print_rows,
                                 resolve_references, terminal_safe, with_db)
from meshnode.container import now_ms
from meshnode.store import short_ids
from meshnode.store.database import Database


def add_note_parsers(note, common) -> None:
    p = note.add_parser("read", parents=[common], help="show a note in full and mark it read",
                        epilog="example: meshnode note read Zj0MbGG0y9   (the short id `note list` shows)")
    p.add_argument("did", metavar="NOTE", help="the note's container DID or its short id")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_note_read)
    p = note.add_parser("show", parents=[common], help="show a note in full without marking it read",
                        epilog="example: meshnode note show Zj0MbGG0y9")
    p.add_argument("did", metavar="NOTE", help="the note's container DID or its short id")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_note_show)
    p = note.add_parser("tag", parents=[common], help="add or remove the note's local tags (never forwarded)",
                        epilog="example: meshnode note tag Zj0MbGG0y9 later errand --remove done")
    p.add_argument("did", metavar="NOTE", help="the note's container DID or its short id")
    p.add_argument("tags", nargs="*", help="tags to add")
    p.add_argument("--remove", action="append", default=[], metavar="TAG", help="a tag to remove (repeatable)")
    p.set_defaults(func=cmd_note_tag)
    cli_edits.add_note_parsers(note, common)


def add_parsers(sub, common) -> None:
    diary = sub.add_parser("diary", parents=[common], help="the diary (CogSync, shared with friends)")
    diary = diary.add_subparsers(dest="diary_command", required=True, metavar="SUBCOMMAND")
    p = diary.add_parser("add", parents=[common], help="write a diary entry (or a new version of one)",
                         epilog="example: meshnode diary add 'the mesh held' --topic mesh --replaces uA2f9xQk1c")
    p.add_argument("text", help="the entry's text")
    p.add_argument("--title", help="a title")
    p.add_argument("--topic", action="append", default=[], help="a topic (repeatable); topics are its tags")
    _replaces(p, "diary entry")
    p.set_defaults(func=cmd_diary_add)
    _list_parser(diary, common, "diary", "diary entries, the version each lineage shows")
    cli_edits.add_diary_parsers(diary, common)

    concept = sub.add_parser("concept", parents=[common], help="concepts (CogSync semantic nodes)")
    concept = concept.add_subparsers(dest="concept_command", required=True, metavar="SUBCOMMAND")
    p = concept.add_parser("add", parents=[common], help="define a concept (or a new version of one)",
                           epilog="example: meshnode concept add cat --alias felis --tag animals")
    p.add_argument("label", help="the concept's name")
    p.add_argument("--description", help="what it means")
    p.add_argument("--alias", action="append", default=[], help="another name (repeatable)")
    p.add_argument("--tag", action="append", default=[], help="a tag (repeatable)")
    _replaces(p, "concept")
    p.set_defaults(func=cmd_concept_add)
    _list_parser(concept, common, "concepts", "concepts")
    cli_edits.add_concept_parsers(concept, common)

    link = sub.add_parser("link", parents=[common], help="links between concepts (CogSync semantic edges)")
    link = link.add_subparsers(dest="link_command", required=True, metavar="SUBCOMMAND")
    p = link.add_parser("add", parents=[common], help="relate a concept to others, by container DID or short id",
                        epilog="example: meshnode link add Zj0MbGG0y9 is-a TougY9I3RX --inverse has-kind\n"
                               "(the ids are those `meshnode concept list` shows)")
    p.add_argument("source", metavar="SOURCE", help="the concept's container DID or short id")
    p.add_argument("relation", help="e.g. is-a, part-of, causes, related-to, contradicts, supports")
    p.add_argument("targets", metavar="TARGET", nargs="+", help="the related concepts' container DIDs or short ids")
    p.add_argument("--inverse", help="the relation read backwards, e.g. has-part")
    p.add_argument("--domain", help="the field the link belongs to, e.g. biology")
    p.add_argument("--tag", action="append", default=[], help="a tag (repeatable)")
    _replaces(p, "link")
    p.set_defaults(func=cmd_link_add)
    _list_parser(link, common, "links", "links")
    cli_edits.add_link_parsers(link, common)

    p = sub.add_parser("search", parents=[common], help="find notes, diary entries and concepts by their words",
                       epilog="example: meshnode search lunch --kind notes --kind diary")
    p.add_argument("query", help="the words to find (as written: a substring, case-insensitive for ASCII)")
    p.add_argument("--kind", action="append", choices=knowledge.SEARCH_KINDS, default=[],
                   help="search only these (repeatable; default all)")
    p.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("sync", parents=[common], help="sync with a peer now (needs a running node)",
                       epilog="example: meshnode sync bob   (a peer's name, short id key:..., or did:key:...)")
    p.add_argument("did", metavar="PEER", help="the peer: its DID, name or short id")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_sync)


def _replaces(p, noun: str) -> None:
    p.add_argument("--replaces", action="append", default=[], metavar="DID",
                   help=f"the {noun} this one updates, by container DID or short id (repeatable: joins forks)")
    p.add_argument("--allow-dangling", action="store_true",
                   help="refer to containers this node does not hold (refused otherwise: usually a typo)")
    p.add_argument("--forward", type=int, choices=(0, 1), default=None, metavar="N",
                   help="hops past your friends it may travel: 0 keeps it with your friends, 1 lets them "
                        "pass it to theirs (default: no limit, friend to friend)")


def _list_parser(sub, common, kind: str, what: str) -> None:
    p = sub.add_parser("list", parents=[common], help=f"list {what}, newest first")
    p.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_list, kind=kind)


# --- commands ---------------------------------------------------------------------


def _add(args, cmd: str, request, build) -> int:
    """Write a diary entry, concept or link: through the running node, else here. ``request``
    and ``build`` are functions of the arguments, called once their references are resolved."""
    config = _config(args)
    resolve_references(config, args, _REFERENCES[cmd])

    def local(db: Database, key):
        c = build(key)
        db.put_container(c, received_at_ms=now_ms())
        return {"did": c.did}

    print(live_or_local(config, cmd, request(), local, needs_key=True)["did"])
    return 0


# what each command refers to: (argument, as a person typed it, the class it must name)
_REFERENCES = {
    "diary_add": (("replaces", "--replaces", "diary_entry"),),
    "concept_add": (("replaces", "--replaces", "semantic_node"),),
    "link_add": (("source", "SOURCE", "semantic_node"), ("targets", "TARGET", "semantic_node"),
                 ("replaces", "--replaces", "semantic_edges")),
}


def cmd_diary_add(args) -> int:
    return _add(args, "diary_add",
                lambda: {"text": args.text, "title": args.title, "topics": args.topic, "previous": args.replaces,
                         "forward": args.forward},
                lambda key: knowledge.make_diary_entry(key, args.text, now_ms=now_ms(), title=args.title,
                                                       topics=args.topic, replaces=args.replaces,
                                                       forward=args.forward))


def cmd_concept_add(args) -> int:
    return _add(args, "concept_add",
                lambda: {"label": args.label, "description": args.description, "aliases": args.alias,
                         "tags": args.tag, "previous": args.replaces, "forward": args.forward},
                lambda key: knowledge.make_concept(key, args.label, now_ms=now_ms(), description=args.description,
                                                   aliases=args.alias, tags=args.tag, replaces=args.replaces,
                                                   forward=args.forward))


def cmd_link_add(args) -> int:
    return _add(args, "link_add",
                lambda: {"source": args.source, "relation": args.relation, "targets": args.targets,
                         "domain": args.domain, "inverse": args.inverse, "tags": args.tag, "previous": args.replaces,
                         "forward": args.forward},
                lambda key: knowledge.make_link(key, args.source, args.relation, args.targets, now_ms=now_ms(),
                                                domain=args.domain, inverse=args.inverse, tags=args.tag,
                                                replaces=args.replaces, forward=args.forward))


def _versions(r: dict) -> str:
    return f"  [{r['forks']} fork(s)]" if r.get("forks") else ""


_LINES = {
    "diary": lambda r: f"{short_ids.short_container_id(r['container_did'])}  {r['timestamp'][:19]}  "
                       + (f"({', '.join(r['tags'])}) " if r["tags"] else "") + r["text"] + _versions(r),
    "concepts": lambda r: f"{short_ids.short_container_id(r['container_did'])}  {r['timestamp'][:19]}  {r['name']}"
                          + (f": {r['description']}" if r["description"] else "")
                          + (f"  [{', '.join(r['tags'])}]" if r["tags"] else "") + _versions(r),
    "links": lambda r: f"{short_ids.short_container_id(r['container_did'])}  {r['timestamp'][:19]}  "
                       f"{r['from_name'] or r['from_did']} --{r['relation_type']}--> {r['to_name'] or r['to_did']}",
}


def cmd_list(args) -> int:
    config = _config(args)
    rows = live_or_local(config, args.kind, {"limit": args.limit},
                         lambda db: knowledge.listing(db, args.kind, args.limit))
    print_rows(args, rows, _LINES[args.kind])
    return 0


def cmd_note_read(args) -> int:
    config = _config(args)
    did = container_did(config, args.did, "note")
    return _print_note(args, live_or_local(config, "note_read", {"did": did}, lambda db: knowledge.read_note(db, did)))


def cmd_note_show(args) -> int:
    """Read-only, so straight from the database (WAL lets it in beside a running node)."""
    did = container_did(_config(args), args.did, "note")
    return _print_note(args, with_db(args, lambda db: knowledge.show_note(db, did)))


def _print_note(args, note: dict) -> int:
    if args.json:
        print_json(note)
        return 0
    for k in ("container_did", "agent_did", "timestamp", "audience", "source", "priority", "topic"):
        if note.get(k) is not None:
            print(terminal_safe(f"{k + ':':15} {note[k]}"))
    for k in ("mentions", "hashtags", "tags"):
        if note[k]:
            print(terminal_safe(f"{k + ':':15} {', '.join(note[k])}"))
    print()
    print(terminal_safe(note["text"], keep_newlines=True))
    return 0


def cmd_search(args) -> int:
    rows = with_db(args, lambda db: knowledge.search(db, args.query, args.kind, args.limit))
    print_rows(args, rows, lambda r: f"{r['kind']:7} {short_ids.short_container_id(r['did'] or '-')}  "
                                     f"{(r['timestamp'] or '')[:19]}  {r['text'].splitlines()[0] if r['text'] else ''}")
    return 0


def cmd_note_tag(args) -> int:
    config = _config(args)
    did = container_did(config, args.did, "note")
    tags = live_or_local(config, "note_tag", {"did": did, "add": args.tags, "remove": args.remove},
                         lambda db: knowledge.tag_note(db, did, args.tags, args.remove))
    print(terminal_safe(", ".join(tags) if tags else "(no tags)"))
    return 0


def cmd_sync(args: argparse.Namespace) -> int:
    config = _config(args)
    did = agent_did(config, args.did)
    result = _ask_node(config, "sync", {"did": did}, timeout=120.0)
    if args.json:
        print_json(result)
        return 0
    print(f"sent {result['pushed']}, received {result['fetched']} container(s)")
    return 0
