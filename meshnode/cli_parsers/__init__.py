"""The command line's grammar: the parsers of each command group, one module per group.

Building the whole parser is what every ``meshnode`` call does first (``--version`` too),
so these modules load argparse and nothing heavy: each command names its function
(``commands.cmd_x``, a ``Command``), whose module is imported only when that command runs.
"""
