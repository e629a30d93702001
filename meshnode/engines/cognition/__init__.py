"""The cognition module: the REPL Cognitive Core (seed 000) as the node's mind.

Built so far (issue 6, in progress): the cycle (``cycle``) with its contexts
(``contexts``), the LLM registry and an OpenAI-compatible client
(``registry``, ``llm``), command extraction and schemas (``commands``,
``command_types``), the store-only command executor (``executor``), and the
local novelty measure of the anti-stagnation reflex (``novelty``).
"""
