"""The parsers of the commands in ``meshnode.faces.cli.inbox`` (imported only when one runs)."""

from __future__ import annotations

from meshnode.faces.cli.parsers.commands import Commands

commands = Commands("meshnode.faces.cli.inbox")
KINDS = ("confirmation", "a2a_message", "held_command", "draft", "drafts_accepted", "escalation", "notice",
         "task_unclaimed")  # records.inbox


def add_parsers(sub, common) -> None:
    p = sub.add_parser("inbox", parents=[common], help="what waits for you: confirmations, held A2A messages, held"
                       " commands, drafts, escalations, notices (newest first)",
                       description="Everything waiting for your decision, newest first, with the decisions each"
                       " takes; the web notebook shows the same at /inbox. Decide with `meshnode inbox decide KIND"
                       " REF DECISION` or the command each kind has (`confirm approve N`, `mind release N`...).")
    p.add_argument("--thread", help="only the items of this conversation (its thread id)")
    p.add_argument("--count", action="store_true", help="only how many wait, by kind")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_inbox)
    acts = p.add_subparsers(dest="inbox_command", metavar="ACTION")
    d = acts.add_parser("decide", parents=[common], help="decide one item (through the action of its kind)")
    d.add_argument("kind", choices=KINDS, help="the item's kind, as `meshnode inbox` lists it")
    d.add_argument("ref", help="the item's ref, as `meshnode inbox` lists it")
    d.add_argument("decision", help="one of the item's decisions: approve, reject, release, drop, accept, commit,"
                                    " dismiss")
    d.add_argument("--json", action="store_true", help="machine-readable output")
    d.set_defaults(func=commands.cmd_decide)
