"""CLI commands for the notebook's local side and CogSync knowledge:
``note read|tag``, ``diary add|list``, ``concept add|list``, ``link add|list``, ``sync``.

Each works on the running node when there is one (so new knowledge reaches the
mesh at the next sync) and on the database directly otherwise.
"""

from __future__ import annotations

import argparse
import json

from meshnode import cli_edits, knowledge
from meshnode.cli_common import _ask_node, _config, live_or_local, terminal_safe
from meshnode.container import now_ms
from meshnode.store.database import Database


def add_note_parsers(note, common) -> None:
    p = note.add_parser("read", parents=[common], help="show a note in full and mark it read")
    p.add_argument("did")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_note_read)
    p = note.add_parser("tag", parents=[common], help="add or remove the note's local tags (never forwarded)")
    p.add_argument("did")
    p.add_argument("tags", nargs="*", help="tags to add")
    p.add_argument("--remove", action="append", default=[], metavar="TAG", help="a tag to remove (repeatable)")
    p.set_defaults(func=cmd_note_tag)
    cli_edits.add_note_parsers(note, common)


def add_parsers(sub, common) -> None:
    diary = sub.add_parser("diary", parents=[common], help="the diary (CogSync, shared with friends)")
    diary = diary.add_subparsers(dest="diary_command", required=True, metavar="SUBCOMMAND")
    p = diary.add_parser("add", parents=[common], help="write a diary entry (or a new version of one)")
    p.add_argument("text")
    p.add_argument("--title")
    p.add_argument("--topic", action="append", default=[], help="a topic (repeatable); topics are its tags")
    _replaces(p)
    p.set_defaults(func=cmd_diary_add)
    _list_parser(diary, common, "diary", "diary entries, the version each lineage shows")
    cli_edits.add_diary_parsers(diary, common)

    concept = sub.add_parser("concept", parents=[common], help="concepts (CogSync semantic nodes)")
    concept = concept.add_subparsers(dest="concept_command", required=True, metavar="SUBCOMMAND")
    p = concept.add_parser("add", parents=[common], help="define a concept (or a new version of one)")
    p.add_argument("label")
    p.add_argument("--description")
    p.add_argument("--alias", action="append", default=[], help="another name (repeatable)")
    p.add_argument("--tag", action="append", default=[], help="a tag (repeatable)")
    _replaces(p)
    p.set_defaults(func=cmd_concept_add)
    _list_parser(concept, common, "concepts", "concepts")
    cli_edits.add_concept_parsers(concept, common)

    link = sub.add_parser("link", parents=[common], help="links between concepts (CogSync semantic edges)")
    link = link.add_subparsers(dest="link_command", required=True, metavar="SUBCOMMAND")
    p = link.add_parser("add", parents=[common], help="relate a concept to others, by container DID")
    p.add_argument("source", help="the concept's container DID")
    p.add_argument("relation", help="e.g. is-a, part-of, causes, related-to, contradicts, supports")
    p.add_argument("targets", nargs="+", help="container DIDs of the related concepts")
    p.add_argument("--inverse", help="the relation read backwards, e.g. has-part")
    p.add_argument("--domain")
    p.add_argument("--tag", action="append", default=[], help="a tag (repeatable)")
    _replaces(p)
    p.set_defaults(func=cmd_link_add)
    _list_parser(link, common, "links", "links")
    cli_edits.add_link_parsers(link, common)

    p = sub.add_parser("sync", parents=[common], help="sync with a peer now (needs a running node)")
    p.add_argument("did")
    p.set_defaults(func=cmd_sync)


def _replaces(p) -> None:
    p.add_argument("--replaces", action="append", default=[], metavar="DID",
                   help="the version this one updates (repeatable: joins forks)")
    p.add_argument("--forward", type=int, choices=(0, 1), default=None, metavar="N",
                   help="hops past your friends it may travel: 0 keeps it with your friends, 1 lets them "
                        "pass it to theirs (default: no limit, friend to friend)")


def _list_parser(sub, common, kind: str, what: str) -> None:
    p = sub.add_parser("list", parents=[common], help=f"list {what}")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_list, kind=kind)


# --- commands ---------------------------------------------------------------------


def _add(args, cmd: str, request: dict, build) -> int:
    config = _config(args)

    def local(db: Database, key):
        c = build(key)
        db.put_container(c, received_at_ms=now_ms())
        return {"did": c.did}

    print(live_or_local(config, cmd, request, local, needs_key=True)["did"])
    return 0


def cmd_diary_add(args) -> int:
    return _add(args, "diary_add", {"text": args.text, "title": args.title, "topics": args.topic,
                                    "previous": args.replaces, "forward": args.forward},
                lambda key: knowledge.make_diary_entry(key, args.text, now_ms=now_ms(), title=args.title,
                                                       topics=args.topic, replaces=args.replaces,
                                                       forward=args.forward))


def cmd_concept_add(args) -> int:
    return _add(args, "concept_add", {"label": args.label, "description": args.description, "aliases": args.alias,
                                      "tags": args.tag, "previous": args.replaces, "forward": args.forward},
                lambda key: knowledge.make_concept(key, args.label, now_ms=now_ms(), description=args.description,
                                                   aliases=args.alias, tags=args.tag, replaces=args.replaces,
                                                   forward=args.forward))


def cmd_link_add(args) -> int:
    return _add(args, "link_add", {"source": args.source, "relation": args.relation, "targets": args.targets,
                                   "domain": args.domain, "inverse": args.inverse, "tags": args.tag,
                                   "previous": args.replaces, "forward": args.forward},
                lambda key: knowledge.make_link(key, args.source, args.relation, args.targets, now_ms=now_ms(),
                                                domain=args.domain, inverse=args.inverse, tags=args.tag,
                                                replaces=args.replaces, forward=args.forward))


_LINES = {
    "diary": lambda r: f"{r['timestamp']}  {r['text']}" + (f"  [{r['forks']} fork(s)]" if r["forks"] else ""),
    "concepts": lambda r: f"{r['timestamp']}  {r['name']}" + (f": {r['description']}" if r["description"] else "")
                          + (f"  [{r['forks']} fork(s)]" if r["forks"] else ""),
    "links": lambda r: f"{r['timestamp']}  {r['from_name'] or r['from_did']} --{r['relation_type']}--> "
                       f"{r['to_name'] or r['to_did']}",
}


def cmd_list(args) -> int:
    config = _config(args)
    cmd = {"diary": "diary", "concepts": "concepts", "links": "links"}[args.kind]
    rows = live_or_local(config, cmd, {"limit": args.limit},
                         lambda db: knowledge.listing(db, args.kind, args.limit))
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            print(terminal_safe(_LINES[args.kind](r)))
            print(f"    {r['container_did']}")
    return 0


def cmd_note_read(args) -> int:
    config = _config(args)
    note = live_or_local(config, "note_read", {"did": args.did}, lambda db: knowledge.read_note(db, args.did))
    if args.json:
        print(json.dumps(note, indent=2))
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


def cmd_note_tag(args) -> int:
    config = _config(args)
    tags = live_or_local(config, "note_tag", {"did": args.did, "add": args.tags, "remove": args.remove},
                         lambda db: knowledge.tag_note(db, args.did, args.tags, args.remove))
    print(terminal_safe(", ".join(tags) if tags else "(no tags)"))
    return 0


def cmd_sync(args: argparse.Namespace) -> int:
    config = _config(args)
    result = _ask_node(config, "sync", {"did": args.did}, timeout=120.0)
    print(f"pushed {result['pushed']}, fetched {result['fetched']} in {result['rounds']} round(s),"
          f" {result.get('passes', 1)} pass(es)")
    return 0
