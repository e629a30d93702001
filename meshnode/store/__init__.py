"""The store: one SQLite database per node.

Owns: the schema and its migrations, the ``containers`` table (exact signed
bytes), the HMP agent tables as views of containers, durable commits.
May call: the container codec (to re-verify what it reads back).
Must never: hold a private key, or be opened by a second process while a
node runs (later commands talk to the running node instead).
"""

from meshnode.base.lazy import exports

__getattr__ = exports(__name__, {
    "Database": "meshnode.store.database",
    "Store": "meshnode.store.service",
    "latest_version": "meshnode.store.migrate",
})

__all__ = ["Database", "Store", "latest_version"]
