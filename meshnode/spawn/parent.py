"""The parent's side of a spawn, whether its node runs (LiveParent, used from a worker thread inside
the node) or not (LocalParent, its own database connection)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Protocol, TypeVar

from meshnode.store.database import Database

T = TypeVar("T")


class ParentSide(Protocol):
    did: str
    peer_id: str
    name: str
    home: Path
    db_path: Path
    running: bool

    def addresses(self) -> list[str]: ...
    def write(self, fn: Callable[[Database], T]) -> T: ...
    def read(self, fn: Callable[[Database], T]) -> T: ...
    def reached(self, did: str) -> bool: ...


class LocalParent:
    """No node runs: the parent's own Database connection."""

    running = False

    def __init__(self, config, key):
        raise NotImplementedError

    def addresses(self) -> list[str]:
        raise NotImplementedError

    def write(self, fn: Callable[[Database], T]) -> T:
        raise NotImplementedError

    def read(self, fn: Callable[[Database], T]) -> T:
        raise NotImplementedError

    def reached(self, did: str) -> bool:
        return False

    def close(self) -> None:
        raise NotImplementedError


class LiveParent:
    """Inside the running node, from a worker thread: trio.from_thread.run(store.write, ...)."""

    running = True

    def __init__(self, config, key, store, mesh):
        raise NotImplementedError

    def addresses(self) -> list[str]:
        raise NotImplementedError

    def write(self, fn: Callable[[Database], T]) -> T:
        raise NotImplementedError

    def read(self, fn: Callable[[Database], T]) -> T:
        raise NotImplementedError

    def reached(self, did: str) -> bool:
        raise NotImplementedError
