"""GMP's part in the store: step-8 admission with its pending set (``gmp.store_admission``) and the
goal, task and entry views (``gmp.store_views``), as the store's hooks for goal, task and
workflow_entry 1.1 (``meshnode.store.hooks``).

:func:`install` registers them; each process calls it where it starts (the CLI's ``main``, the
node's ``run_node``, the tests' conftest, a bench script). A store without them stores no
container (``store.hooks``), so a process that forgot it fails at its first write, loudly.
Light to import (the CLI installs before it knows whether the command opens a store): the
admission and view code loads with the first GMP container.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from meshnode.base.container.gmp_classes import CLASSES, VERSION
from meshnode.store.hooks import DEFAULT, StoreHooks

if TYPE_CHECKING:
    import sqlite3

    from meshnode.base.container import Container
    from meshnode.records.gmp.store_views import Removal
    from meshnode.store.hooks import StoreFn


class GmpStoreHooks:
    """``store.hooks.ClassHooks`` for GMP 1.1. Holds no state: one object serves every store."""

    classes = frozenset((cls, VERSION) for cls in CLASSES)

    def admit(self, conn: sqlite3.Connection, c: Container, received_at_ms: int, received_from: str | None) -> bool:
        from meshnode.records.gmp import store_admission

        return store_admission.admit(conn, c, received_at_ms, received_from)

    def stored(self, conn: sqlite3.Connection, c: Container, store: StoreFn) -> None:
        from meshnode.records.gmp import store_admission

        store_admission.released(conn, c, store)

    def materialise(self, conn: sqlite3.Connection, c: Container) -> None:
        from meshnode.records.gmp import store_views

        store_views.refresh(conn, c)

    def clear(self, conn: sqlite3.Connection) -> None:
        from meshnode.records.gmp import store_views

        store_views.clear(conn)

    def rebuilt(self, conn: sqlite3.Connection) -> None:
        from meshnode.records.gmp import store_views

        store_views.rebuild_all(conn)

    def removal(self, conn: sqlite3.Connection) -> Removal:
        from meshnode.records.gmp import store_views

        return store_views.Removal(conn)


HOOKS = GmpStoreHooks()


def install(hooks: StoreHooks = DEFAULT) -> StoreHooks:
    """Register GMP's store hooks in ``hooks`` (the process default unless given); running it
    again changes nothing. Returns ``hooks``."""
    hooks.register(HOOKS)
    return hooks
