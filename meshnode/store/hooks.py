"""What a domain package plugs into the store: the admission and the views of its own classes.

The store keeps containers and the rows every class has (links, recipients, tags, notes, the
CogSync lineage index); it imports no GMP rule. A package whose classes need more (GMP: step-8
admission with its pending set, the goal, task and entry views) gives a :class:`ClassHooks` for
them to a :class:`StoreHooks`, and every ``Database`` runs with one.

``DEFAULT`` is the set a ``Database`` opened without one uses. Each process installs into it
where it starts (the CLI's ``main``, the node's ``run_node``, the tests' conftest, a bench
script: ``meshnode.records.gmp.store_hooks.install()``). A store whose hooks leave a class of
``container.schema.hooked_classes`` without one stores no container at all, of any class, and
rebuilds and evicts nothing (StoreError ``no_store_hooks``): a forgotten installer fails at the
first write and loudly, never as a store that quietly skips admission. Opening, migrating and
reading need no hooks (``meshnode init`` and the read-only commands do only that).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Protocol

from meshnode.base.container.schema import hooked_classes
from meshnode.base.errors import StoreError

if TYPE_CHECKING:  # light to import: the CLI installs the hooks before it knows whether it opens a store
    import sqlite3

    from meshnode.base.container import Container


class StoreFn(Protocol):
    """Stores a container's rows and views, without admission (what a hook releases); False if
    it was there already."""

    def __call__(self, conn: sqlite3.Connection, c: Container, received_at_ms: int,
                 received_from: str | None) -> bool: ...


class Removal(Protocol):
    """One removal of containers (quota eviction) in the caller's transaction."""

    def take(self, did: str, cls: str) -> None:
        """Before the container's own rows go: drop the rows the hooks derived from it alone."""

    def finish(self) -> None:
        """After every container of the call went: draw again what the removed ones took part in."""


class ClassHooks(Protocol):
    """A domain package's part in the store, for the (class, class_version) pairs in ``classes``.
    Each method runs inside the caller's write transaction."""

    classes: frozenset[tuple[str, str]]

    def admit(self, conn: sqlite3.Connection, c: Container, received_at_ms: int, received_from: str | None) -> bool:
        """Before ``c`` (of these classes) is stored: True to store it now, False when it is held
        aside (``stored`` stores it once what it waits for arrives). Raises an ``AdmissionRefused``
        to refuse it."""

    def stored(self, conn: sqlite3.Connection, c: Container, store: StoreFn) -> None:
        """After any container was stored: what waited for it may go in now, through ``store``."""

    def materialise(self, conn: sqlite3.Connection, c: Container) -> None:
        """The view rows of an admitted container of these classes."""

    def clear(self, conn: sqlite3.Connection) -> None:
        """Before a full rebuild of the views: drop what is derived from these classes alone."""

    def rebuilt(self, conn: sqlite3.Connection) -> None:
        """After a full rebuild (every container materialised again, in arrival order)."""

    def removal(self, conn: sqlite3.Connection) -> Removal:
        """A removal of containers in this transaction."""


class StoreHooks:
    """The class hooks a ``Database`` runs with, by (class, class_version)."""

    def __init__(self, *hooks: ClassHooks):
        self._by_class: dict[tuple[str, str], ClassHooks] = {}
        self._all: tuple[ClassHooks, ...] = ()
        self._complete = False  # once every hooked class has hooks (registering only adds)
        for h in hooks:
            self.register(h)

    def register(self, hooks: ClassHooks) -> None:
        """Add ``hooks`` for its classes. The same object again changes nothing (installers may run
        twice); another object for a class already taken is a mistake and raises ValueError."""
        if any(h is hooks for h in self._all):
            return
        taken = sorted(k for k in hooks.classes if k in self._by_class)
        if taken:
            raise ValueError(f"store hooks for {taken} are registered already")
        self._by_class.update(dict.fromkeys(hooks.classes, hooks))
        self._all = (*self._all, hooks)

    def of(self, c: Container) -> ClassHooks | None:
        """The hooks of ``c``'s class and version, or None (the store's own rows only)."""
        return self.of_class(c.cls, c.head.get("class_version"))

    def of_class(self, cls: str, version: str | None) -> ClassHooks | None:
        return self._by_class.get((cls, version))

    def __iter__(self) -> Iterator[ClassHooks]:
        return iter(self._all)

    def check(self) -> None:
        """StoreError ``no_store_hooks`` naming each hooked class without hooks and its installer.
        Runs before every container write: once the hooks are complete it costs one attribute."""
        if self._complete:
            return
        missing = {k: by for k, by in hooked_classes().items() if k not in self._by_class}
        if missing:
            names = ", ".join(f"{cls} {version}" for cls, version in sorted(missing))
            raise StoreError("no_store_hooks", f"the store has no hooks for {names}: call "
                                               f"{' or '.join(sorted(set(missing.values())))}() where the process"
                                               " starts, or open the Database with hooks that have them")
        self._complete = True


DEFAULT = StoreHooks()
