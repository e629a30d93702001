"""A real node with its web notebook, for HTTP tests: ``meshnode run`` with ``[web] listen`` on a free
loopback port, its token read from the home, and an httpx client with the Bearer token.

    with web_node(tmp_path) as web:
        status = web.get("/api/status")            # the result; ok asserted
        r = web.raw_post("/api/notes", {"x": 1})   # the httpx.Response, for error tests

``llm`` (an llmharness.ScriptedLLM) is registered as the node's LLM and its cognition runs with a short
pause; without one, cognition is off (``agent_node`` makes both). Extra settings go in ``env``
(MESHNODE_* variables). ``refused`` checks an error answer the same way in every web test.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any, Iterator

import httpx

from llmharness import ScriptedLLM, distinct_answers
from meshharness import Node

FAST_MIND = {"MESHNODE_COGNITION_PAUSE_SECONDS": "0.2"}


class WebNode:
    def __init__(self, tmp: Path, name: str = "web", env: dict | None = None, llm=None):
        settings = {"MESHNODE_WEB_LISTEN": "127.0.0.1:0", "MESHNODE_WEB_FEED_MS": "100"}
        settings.update(FAST_MIND if llm is not None else {"MESHNODE_COGNITION_ENABLED": "false"})
        self.llm = llm
        self.node = Node(Path(tmp), name, env={**settings, **(env or {})})
        self.home = self.node.home
        if llm is not None:
            self.node.cli("llm", "add", "main", "--url", llm.url, "--model", "scripted")
        self._client: httpx.Client | None = None
        self.url = ""
        self.token = ""
        self.start()

    def start(self, timeout: float = 30.0) -> None:
        """Start (or restart) the node; the URL may change (a new free port)."""
        self.node.start(timeout)
        assert self.node.web_url, f"no `web:` line in the node's output: {self.node.output[-20:]}"
        self.url = self.node.web_url.rstrip("/")
        self.token = (self.home / "web.token").read_text().strip()
        if self._client is not None:
            self._client.close()
        self._client = self.client()

    def client(self, *, bearer: bool = True, **kw) -> httpx.Client:
        """An httpx client on this node (Bearer auth unless ``bearer=False``: then it has no credentials)."""
        headers = {"Authorization": f"Bearer {self.token}"} if bearer else {}
        headers.update(kw.pop("headers", {}))
        # no kept-alive connections: one idle past the server's keep-alive timeout (a slow step of a test
        # on a loaded machine) can be closed just as the next request goes out ("Server disconnected")
        limits = kw.pop("limits", httpx.Limits(max_keepalive_connections=0))
        return httpx.Client(base_url=self.url, headers=headers, timeout=kw.pop("timeout", 30.0), limits=limits, **kw)

    def on_db(self, fn):
        """``fn(db)`` on the node's database, opened as another process (the agent's gate, the CLI) would."""
        from meshnode.store import Database

        db = Database(self.home / "data" / "meshnode.db")
        try:
            return fn(db)
        finally:
            db.close()

    def raw_get(self, path: str, **params) -> httpx.Response:
        return self._client.get(path, params=params)

    def raw_post(self, path: str, body: Any = None, **kw) -> httpx.Response:
        return self._client.post(path, json=body if body is not None else {}, **kw)

    @staticmethod
    def _result(response: httpx.Response) -> Any:
        assert response.status_code == 200, f"{response.request.method} {response.request.url.path}:" \
                                            f" {response.status_code} {response.text[:500]}"
        body = response.json()
        assert body["ok"] is True, body
        return body["result"]

    def get(self, path: str, **params) -> Any:
        return self._result(self.raw_get(path, **params))

    def post(self, path: str, body: Any = None) -> Any:
        return self._result(self.raw_post(path, body))

    def cli_json(self, *args: str) -> Any:
        """``meshnode ARGS --json`` against this node, parsed (what the web must agree with)."""
        return json.loads(self.node.cli(*args, "--json"))

    def stop(self) -> int:
        if self._client is not None:
            self._client.close()
            self._client = None
        return self.node.stop()


@contextlib.contextmanager
def web_node(tmp: Path, **kw) -> Iterator[WebNode]:
    web = WebNode(tmp, **kw)
    try:
        yield web
    finally:
        web.stop()


@contextlib.contextmanager
def agent_node(tmp: Path, answers: list | None = None, **kw) -> Iterator[WebNode]:
    """A web node whose agent thinks with a ScriptedLLM giving ``answers`` (``web.llm``); both stopped after.
    The default: distinct answers with no commands (the agent thinks, does nothing, and never reads as
    stagnating: a repeated answer is set aside and its tick has no answer to show)."""
    llm = ScriptedLLM(tmp, "main", answers if answers is not None else distinct_answers(500, lambda i, text: []))
    try:
        with web_node(tmp, llm=llm, **kw) as web:
            yield web
    finally:
        llm.stop()


def refused(response: httpx.Response, status: int, code: str) -> str:
    """The reason of a refused request (its status, code and a reason asserted)."""
    body = response.json()
    assert response.status_code == status, body
    assert body["ok"] is False and body["code"] == code and body["reason"], body
    return body["reason"]
