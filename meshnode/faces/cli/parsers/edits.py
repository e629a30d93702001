"""The parsers of the commands in ``meshnode.faces.cli.edits`` (imported only when one runs)."""

from __future__ import annotations

import argparse

from meshnode.faces.cli.parsers.commands import Commands

commands = Commands("meshnode.faces.cli.edits")


def _id_help(kind: str) -> str:
    return f"any version of it: its container DID or the short id `meshnode {kind} list` shows"


_NOTE = "the note's container DID or the short id `meshnode note list` shows"


def add_diary_parsers(diary, common) -> None:
    _delete_parser(diary, common, "diary", "diary entry")


def add_concept_parsers(concept, common) -> None:
    p = concept.add_parser("update", parents=[common], help="a new version of a concept (what is not given is kept)",
                           formatter_class=argparse.RawDescriptionHelpFormatter,
                           description="Write a new version of a concept, e.g.\n"
                                       "  meshnode concept update DID --description \"a small domesticated feline\"")
    p.add_argument("id", metavar="CONCEPT", help=_id_help("concept"))
    p.add_argument("--label", help="a new label")
    p.add_argument("--description", help="a new description")
    p.add_argument("--alias", action="append", help="another name (repeatable; replaces the aliases)")
    p.add_argument("--tag", action="append", help="a tag (repeatable; replaces the tags)")
    p.set_defaults(func=commands.cmd_edit, op="concept_update")
    _delete_parser(concept, common, "concept", "concept")


def add_link_parsers(link, common) -> None:
    p = link.add_parser("update", parents=[common], help="a new version of a link of one relation",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        description="Write a new version of a link, e.g.\n"
                                    "  meshnode link update DID --relation part-of")
    p.add_argument("id", metavar="LINK", help=_id_help("link"))
    p.add_argument("--relation", help="a new relation, e.g. part-of")
    p.add_argument("--target", action="append", metavar="CONCEPT",
                   help="a target concept, by container DID or short id (repeatable; replaces them)")
    p.add_argument("--inverse", help="a new inverse relation, e.g. has-part")
    p.add_argument("--allow-dangling", action="store_true",
                   help="a target this node does not hold (refused otherwise: usually a typo)")
    p.set_defaults(func=commands.cmd_edit, op="link_update")
    _delete_parser(link, common, "link", "link")


def add_note_parsers(note, common) -> None:
    p = note.add_parser("update", parents=[common], help="a new version of one of your notes (the old one is hidden)",
                        epilog="example: meshnode note update Zj0MbGG0y9 'lunch at one'   (the short id `note list`"
                               " shows)")
    p.add_argument("id", metavar="NOTE", help=_NOTE)
    p.add_argument("text", help="the note's new text")
    p.set_defaults(func=commands.cmd_edit, op="note_update")
    p = note.add_parser("delete", parents=[common], help="hide a note on this node (copies sent stay)")
    p.add_argument("id", metavar="NOTE", help=_NOTE)
    p.add_argument("--restore", action="store_true", help="show a hidden note again")
    p.set_defaults(func=commands.cmd_edit, op="note_delete")


def _delete_parser(sub, common, kind: str, what: str) -> None:
    p = sub.add_parser("delete", parents=[common], help=f"withdraw a {what} of yours (a signed retraction)",
                       description=f"Withdraw a {what} you wrote: a signed last version that removes it here and"
                                   " on the friends' nodes that sync it. Others' knowledge is not yours to"
                                   " withdraw: write a new version instead.")
    p.add_argument("id", metavar=kind.upper(), help=_id_help(kind))
    p.set_defaults(func=commands.cmd_edit, op=f"{kind}_delete")
