"""Where the web server listens, once it is bound: ``[web] listen`` with port 0 lets the system pick
the port, known only after the server started.

Made before everything that needs it (the guard's Host check, the node's ``status`` and so ``meshnode
web url``) and handed to each at construction; the server fills it in once bound. It stays empty
while the notebook is off. Light: no Starlette, so the node makes one whether the web runs or not.
"""

from __future__ import annotations

from meshnode.base.config.web import parse_listen


class WebAddress:
    def __init__(self):
        self.bound: str | None = None  # host:port as the server bound it
        self.port: int | None = None
        self.url: str | None = None  # the URL a person opens (server.web_url)

    def set(self, bound: str, url: str) -> None:
        """Once, by the server: where it listens now."""
        self.bound, self.port, self.url = bound, parse_listen(bound)[1], url
