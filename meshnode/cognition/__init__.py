"""The cognition module: the REPL Cognitive Core (seed 000) as the node's mind.

Being built (issue 6). What exists: command extraction from LLM answers
(``commands``), with the command schemas it validates against (``command_types``).
"""
