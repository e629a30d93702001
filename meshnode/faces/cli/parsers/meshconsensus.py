"""The parsers of the commands in ``meshnode.faces.cli.meshconsensus`` (imported only when one runs)."""

from __future__ import annotations

from meshnode.faces.cli.parsers.commands import Commands

commands = Commands("meshnode.faces.cli.meshconsensus")


def add_parsers(consensus, common) -> None:
    p = consensus.add_parser("propose", parents=[common],
                             help="ask the committee to decide a value (needs a running node)")
    p.add_argument("value", help="the text to decide (at most 16 KiB)")
    p.add_argument("--wait", type=float, default=10.0, metavar="SECONDS",
                   help="wait this long for the decision, to report its height (0: do not wait; at most 50)")
    p.set_defaults(func=commands.cmd_propose)
    p = consensus.add_parser("decisions", parents=[common], help="binding decisions, newest first")
    p.add_argument("--limit", type=int, default=20, help="at most this many (default 20)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_decisions)
    p = consensus.add_parser("next-committee", parents=[common],
                             help="propose the next epoch's committee, weighted by the members' published trust")
    p.set_defaults(func=commands.cmd_next_committee)
    p = consensus.add_parser("committee", parents=[common],
                             help="the committee this node is in: height, round, step (needs a running node)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_committee)
