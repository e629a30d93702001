"""CLI commands for the notebook's local side and CogSync knowledge:
``note read|show|tag``, ``diary add|list``, ``concept add|list``, ``link add|list``, ``search``, ``sync``.

Each works on the running node when there is one (so new knowledge reaches the
mesh at the next sync) and on the database directly otherwise.
"""

from __future__ import annotations

import argparse

from meshnode.faces.cli.common import (_ask_node, _config, act, agent_did, container_did, print_json, print_rows,
                                 resolve_references, terminal_safe)
from meshnode.store import short_ids


# --- commands ---------------------------------------------------------------------


def _add(args, cmd: str, request) -> int:
    """Write a diary entry, concept or link (the application's action, by the running node or here);
    ``request`` is a function of the arguments, called once their references are resolved."""
    config = _config(args)
    resolve_references(config, args, _REFERENCES[cmd])
    print(act(config, cmd, request())["did"])
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
                         "forward": args.forward})


def cmd_concept_add(args) -> int:
    return _add(args, "concept_add",
                lambda: {"label": args.label, "description": args.description, "aliases": args.alias,
                         "tags": args.tag, "previous": args.replaces, "forward": args.forward})


def cmd_link_add(args) -> int:
    return _add(args, "link_add",
                lambda: {"source": args.source, "relation": args.relation, "targets": args.targets,
                         "domain": args.domain, "inverse": args.inverse, "tags": args.tag, "previous": args.replaces,
                         "forward": args.forward})


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
    rows = act(config, args.kind, {"limit": args.limit})
    print_rows(args, rows, _LINES[args.kind])
    return 0


def cmd_note_read(args) -> int:
    config = _config(args)
    did = container_did(config, args.did, "note")
    return _print_note(args, act(config, "note_read", {"did": did}))


def cmd_note_show(args) -> int:
    """Read-only: the note is not marked read (``note read`` marks it)."""
    config = _config(args)
    did = container_did(config, args.did, "note")
    return _print_note(args, act(config, "note_show", {"did": did}))


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
    rows = act(_config(args), "search", {"q": args.query, "kinds": args.kind, "limit": args.limit})
    print_rows(args, rows, lambda r: f"{r['kind']:7} {short_ids.short_container_id(r['did'] or '-')}  "
                                     f"{(r['timestamp'] or '')[:19]}  {r['text'].splitlines()[0] if r['text'] else ''}")
    return 0


def cmd_note_tag(args) -> int:
    config = _config(args)
    did = container_did(config, args.did, "note")
    tags = act(config, "note_tag", {"did": did, "add": args.tags, "remove": args.remove})
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
