"""The parsers of the commands in ``meshnode.faces.cli.knowledge`` (imported only when one runs)."""

from __future__ import annotations

from meshnode.faces.cli.parsers.commands import Commands
from meshnode.faces.cli.parsers.vocabulary import SEARCH_KINDS
from meshnode.faces.cli.parsers import edits

commands = Commands("meshnode.faces.cli.knowledge")


def add_note_parsers(note, common) -> None:
    p = note.add_parser("read", parents=[common], help="show a note in full and mark it read",
                        epilog="example: meshnode note read Zj0MbGG0y9   (the short id `note list` shows)")
    p.add_argument("did", metavar="NOTE", help="the note's container DID or its short id")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_note_read)
    p = note.add_parser("show", parents=[common], help="show a note in full without marking it read",
                        epilog="example: meshnode note show Zj0MbGG0y9")
    p.add_argument("did", metavar="NOTE", help="the note's container DID or its short id")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_note_show)
    p = note.add_parser("tag", parents=[common], help="add or remove the note's local tags (never forwarded)",
                        epilog="example: meshnode note tag Zj0MbGG0y9 later errand --remove done")
    p.add_argument("did", metavar="NOTE", help="the note's container DID or its short id")
    p.add_argument("tags", nargs="*", help="tags to add")
    p.add_argument("--remove", action="append", default=[], metavar="TAG", help="a tag to remove (repeatable)")
    p.set_defaults(func=commands.cmd_note_tag)
    edits.add_note_parsers(note, common)


def add_parsers(sub, common) -> None:
    diary = sub.add_parser("diary", parents=[common], help="the diary (CogSync, shared with friends)")
    diary = diary.add_subparsers(dest="diary_command", required=True, metavar="SUBCOMMAND")
    p = diary.add_parser("add", parents=[common], help="write a diary entry (or a new version of one)",
                         epilog="example: meshnode diary add 'the mesh held' --topic mesh --replaces uA2f9xQk1c")
    p.add_argument("text", help="the entry's text")
    p.add_argument("--title", help="a title")
    p.add_argument("--topic", action="append", default=[], help="a topic (repeatable); topics are its tags")
    _replaces(p, "diary entry")
    p.set_defaults(func=commands.cmd_diary_add)
    _list_parser(diary, common, "diary", "diary entries, the version each lineage shows")
    edits.add_diary_parsers(diary, common)

    concept = sub.add_parser("concept", parents=[common], help="concepts (CogSync semantic nodes)")
    concept = concept.add_subparsers(dest="concept_command", required=True, metavar="SUBCOMMAND")
    p = concept.add_parser("add", parents=[common], help="define a concept (or a new version of one)",
                           epilog="example: meshnode concept add cat --alias felis --tag animals")
    p.add_argument("label", help="the concept's name")
    p.add_argument("--description", help="what it means")
    p.add_argument("--alias", action="append", default=[], help="another name (repeatable)")
    p.add_argument("--tag", action="append", default=[], help="a tag (repeatable)")
    _replaces(p, "concept")
    p.set_defaults(func=commands.cmd_concept_add)
    _list_parser(concept, common, "concepts", "concepts")
    edits.add_concept_parsers(concept, common)

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
    p.set_defaults(func=commands.cmd_link_add)
    _list_parser(link, common, "links", "links")
    edits.add_link_parsers(link, common)

    p = sub.add_parser("search", parents=[common], help="find notes, diary entries and concepts by their words",
                       epilog="example: meshnode search lunch --kind notes --kind diary")
    p.add_argument("query", help="the words to find (as written: a substring, case-insensitive for ASCII)")
    p.add_argument("--kind", action="append", choices=SEARCH_KINDS, default=[],
                   help="search only these (repeatable; default all)")
    p.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_search)

    p = sub.add_parser("sync", parents=[common], help="sync with a peer now (needs a running node)",
                       epilog="example: meshnode sync bob   (a peer's name, short id key:..., or did:key:...)")
    p.add_argument("did", metavar="PEER", help="the peer: its DID, name or short id")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_sync)


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
    p.set_defaults(func=commands.cmd_list, kind=kind)
