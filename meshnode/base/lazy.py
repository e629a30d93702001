"""A package's exports loaded when first named (PEP 562), so that importing one of its
modules does not load the others: the CLI's database does not bring the node's ``Store``
(and trio), a container's model does not bring signing (and PyNaCl)."""

from __future__ import annotations

import importlib
from typing import Any, Callable


def exports(package: str, homes: dict[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: ``homes`` maps each exported name to its module."""
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value  # asked once
        return value

    return __getattr__


async def import_in_thread(*names: str) -> None:
    """Import ``names`` in a worker thread, not on the event loop: a face's SDK loaded at its
    first request (seconds on a busy machine) must not stall the node meanwhile. Once loaded,
    importing them again is a lookup."""
    import sys

    import trio

    missing = [n for n in names if n not in sys.modules]
    if missing:
        await trio.to_thread.run_sync(lambda: [importlib.import_module(n) for n in missing])
