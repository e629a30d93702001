"""The parsers of the commands in ``meshnode.faces.cli.consensus`` (imported only when one runs)."""

from __future__ import annotations

import argparse

from meshnode.faces.cli.parsers.commands import Commands
from meshnode.faces.cli.parsers.vocabulary import VOTE_DECISIONS, VOTE_HALF_LIFE_DAYS, VOTE_MIN_TRUST, VOTE_MIN_VOTERS
from meshnode.faces.cli.parsers import meshconsensus

commands = Commands("meshnode.faces.cli.consensus")


def add_parsers(sub, common):
    """Register the ``consensus`` command; returns its subparsers, for more subcommands."""
    consensus = consensus_subparsers(sub, common)
    add_cogvote_parsers(consensus, common)
    meshconsensus.add_parsers(consensus, common)
    return consensus


def consensus_subparsers(sub, common):
    """The ``consensus`` command's subparsers object (call once)."""
    p = sub.add_parser("consensus", parents=[common],
                       help="votes on containers and verifiable results; binding decisions by the committee")
    return p.add_subparsers(dest="consensus_command", required=True, metavar="SUBCOMMAND")


def add_cogvote_parsers(consensus, common) -> None:
    p = consensus.add_parser("vote", parents=[common], help="sign and store a vote on a container",
                             epilog="example: meshnode consensus vote Zj0MbGG0y9 +1 --argument 'checked it'\n"
                                    "The container must be held here (written here, or arrived from a peer).")
    p.add_argument("target", metavar="TARGET_DID", help=_TARGET)
    value = p.add_mutually_exclusive_group(required=True)
    value.add_argument("value", nargs="?", type=_vote_value, metavar="VALUE", help="+1 approve, 0 abstain, -1 object")
    value.add_argument("--value", dest="value", type=_vote_value, metavar="VALUE", help="the same, as an option")
    _type(p)
    p.add_argument("--argument", action="append", default=[], metavar="TEXT", help="a reason (repeatable)")
    p.add_argument("--evidence", action="append", default=[], metavar="DID",
                   help="a container supporting the vote, by DID or short id (repeatable)")
    p.set_defaults(func=commands.cmd_vote)

    p = consensus.add_parser("status", parents=[common], help="the local tally of the votes on a container")
    p.add_argument("target", metavar="TARGET_DID", help=_TARGET)
    _type(p)
    _rule_flags(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_status)

    p = consensus.add_parser("result", parents=[common],
                             help="sign and store a consensus_result listing the votes it used; prints its DID")
    p.add_argument("target", metavar="TARGET_DID", help=_TARGET)
    _type(p)
    _rule_flags(p)
    p.set_defaults(func=commands.cmd_result)

    p = consensus.add_parser("verify", parents=[common],
                             help="recompute a consensus_result from its votes; exit 1 if it does not hold",
                             description="Recompute a consensus_result from the votes it lists. A result file "
                                         "needs no node home: give the votes as files (--vote); a home's store, "
                                         "when there is one, supplies the votes it holds.")
    p.add_argument("result", metavar="RESULT", help="a container file, or the DID or short id of one in the store")
    p.add_argument("--vote", action="append", default=[], metavar="FILE",
                   help="a vote container file the result lists (repeatable)")
    p.set_defaults(func=commands.cmd_verify)


_TARGET = "the container voted on: its DID or its short id"


def _vote_value(text: str) -> int:
    """A vote's value as a person writes it: +1, 1, 0, -1."""
    if text not in ("+1", "1", "0", "-0", "-1"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a vote: give +1 (approve), 0 (abstain) or -1 (object)")
    return int(text)


def _type(p) -> None:
    p.add_argument("--type", dest="decision", choices=VOTE_DECISIONS, default="general",
                   help="general: passes above 1/2 of the decided weight; ethical: at 2/3 or more")


def _rule_flags(p) -> None:
    p.add_argument("--half-life-days", type=float, default=VOTE_HALF_LIFE_DAYS,
                   help="a vote's weight halves every this many days (0: no decay)")
    p.add_argument("--min-voters", type=int, default=VOTE_MIN_VOTERS, help="quorum: voters with trust > 0")
    p.add_argument("--min-trust", type=float, default=VOTE_MIN_TRUST, help="quorum: their trust added up")
