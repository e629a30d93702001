"""The store: one SQLite database per node.

Owns: the schema and its migrations, the ``containers`` table (exact signed
bytes), the HMP agent tables as views of containers, durable commits.
May call: the container codec (to re-verify what it reads back).
Must never: hold a private key, or be opened by a second process while a
node runs (later commands talk to the running node instead).
"""

from meshnode.store.database import Database
from meshnode.store.migrate import latest_version
from meshnode.store.service import Store

__all__ = ["Database", "Store", "latest_version"]
