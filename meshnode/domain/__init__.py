"""The domain layer: HMP's rules as pure code: notes, CogSync knowledge, GMP, both consensus
layers, sync and reputation. No store, no network, no clock read: time and state come in as
arguments, so the node, ``sims/`` and the tests drive the same code."""
