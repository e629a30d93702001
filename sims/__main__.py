"""``python -m sims <scenario> [options]``: run a simulated mesh and report.

    python -m sims consensus --nodes 64 --byzantine 0.3 --seed 1 --out sims-out
    python -m sims consensus --nodes 1000 --committee 100 --byzantine 0.3 --out sims-out
    python -m sims reactor --agents 200 --hours 24 --seed 1 --out sims-out

Prints a progress bar, then a summary table; with ``--out DIR`` writes plots
(PNG) there. The last line is the summary as one JSON object. Exit status 0
when the run was safe; consensus: 3 when an honest pair committed different
values; reactor: 4 when a wake limit was broken, 5 when a signal got no decision.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sims import reactor
from sims.consensus import BEHAVIOURS, ConsensusSim, Options
from sims.report import ProgressBar, plots, summary, table


def _window(text: str) -> tuple[int, int]:
    try:
        start, end = (int(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError("a window is START_MS:END_MS") from None
    if not 0 <= start < end:
        raise argparse.ArgumentTypeError("a window needs 0 <= START_MS < END_MS")
    return start, end


def _share(text: str) -> float:
    value = float(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError("a share is in [0, 1)")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sims", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="scenario", required=True, metavar="SCENARIO")
    p = sub.add_parser("consensus", help="a weighted BFT committee deciding a sequence of values")
    p.add_argument("--nodes", type=int, default=16, help="nodes in the mesh (4 to 1000)")
    p.add_argument("--committee", type=int, help="validators among them, chosen by trust (default: all); "
                                                 "the others are clients and gossip relays")
    p.add_argument("--byzantine", type=_share, default=0.0, help="share of the committee that misbehaves")
    p.add_argument("--behaviour", choices=BEHAVIOURS, default="equivocate")
    p.add_argument("--sybils", type=int, default=0, help="identities with no trust, hence no weight")
    p.add_argument("--heights", type=int, default=20,
                   help="values to ask, one every --submit-every ms (a height decides a block of those asked)")
    p.add_argument("--submit-every", type=int, default=100, metavar="MS",
                   help="ms between two values asked (0: all at once, to see blocks fill)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--latency", type=float, default=50.0, help="median one-way latency, ms")
    p.add_argument("--jitter", type=float, default=0.5, help="log-normal sigma of the latency")
    p.add_argument("--loss", type=_share, default=0.0)
    p.add_argument("--duplication", type=_share, default=0.0)
    p.add_argument("--partition", type=_window, help="START_MS:END_MS, the nodes split in two halves")
    p.add_argument("--max-time", type=int, default=600, help="simulated seconds before giving up")
    p.add_argument("--out", type=Path, help="write PNG plots into this folder")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    reactor.add_arguments(sub.add_parser("reactor", help="a simulated day of signals through the reactor's core"))
    args = parser.parse_args(argv)
    if args.scenario == "reactor":
        return reactor.main(args, parser)
    if not 4 <= args.nodes <= 1000:
        parser.error("--nodes must be between 4 and 1000")
    if args.committee is not None and not 4 <= args.committee <= args.nodes:
        parser.error("--committee must be between 4 and --nodes")
    options = Options(nodes=args.nodes, byzantine=args.byzantine, behaviour=args.behaviour, sybils=args.sybils,
                      heights=args.heights, seed=args.seed, latency_ms=args.latency, jitter=args.jitter,
                      loss=args.loss, duplication=args.duplication, partition=args.partition,
                      max_time_ms=args.max_time * 1000, committee=args.committee,
                      submit_every_ms=args.submit_every)
    bar = None if args.quiet else ProgressBar()
    result = ConsensusSim(options, progress=bar).run()
    if bar:
        bar.close()
    rows = summary(result)
    print(table(rows))
    if args.out:
        for path in plots(result, args.out):
            print(f"wrote {path}")
    print(json.dumps(rows))
    return 0 if result.safe else 3


if __name__ == "__main__":
    sys.exit(main())
