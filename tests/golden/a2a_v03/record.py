"""Record what a real a2a-sdk 0.3 client sends a meshnode (the wire fixtures of tests/test_a2a_wire.py).

Run from the repository, with this project's Python and a second environment that has a2a-sdk 0.3.x:

    python tests/golden/a2a_v03/record.py --sdk-python /path/to/venv-with-a2a-sdk-0.3/bin/python

It starts a real node in a temporary home (``meshnode init``, ``a2a token add friend``, ``run`` on
loopback), then runs this same file under ``--sdk-python`` as the client: the 0.3 SDK's own
``A2ACardResolver`` (both card paths) and ``ClientFactory`` client over an httpx client whose request
hook writes each request (method, path, the headers that matter, the JSON body) and its answer's
status to ``<name>.json`` here. Ids and the token are replaced by placeholders (``REQUEST_ID``,
``MESSAGE_ID``, ``TOKEN``, ``TASK_ID``) that the replay test fills in. The 0.3 client's exchanges:

    card_new, card_old        GET both card paths (no credentials)
    message_send              message/send as the known party "friend" (non-blocking: a task)
    tasks_get                 tasks/get of that task
    message_send_unknown      message/send as an unknown party (no token, metadata.sender): held
    tasks_get_unknown         tasks/get of the held task
    message_stream_unknown    message/stream as an unknown party (SSE)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
KEPT_HEADERS = ("accept", "authorization", "content-type")  # what the node reads; user-agent etc. left out
SENDER = "did:key:zOldClient"  # the unknown party's claimed sender (metadata.sender)


# --- the client side: runs under a2a-sdk 0.3 ------------------------------------------------------

def _placeholders(value, names: dict[str, str]):
    """``value`` with each of ``names``' keys (an id, the token) replaced by its placeholder."""
    if isinstance(value, dict):
        return {k: _placeholders(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_placeholders(v, names) for v in value]
    if isinstance(value, str):
        for real, placeholder in names.items():
            value = value.replace(real, placeholder)
    return value


class Recorder:
    """httpx event hooks: each exchange kept as ``{method, path, headers, json, status}`` under the name
    ``next_name`` set before the client's call."""

    def __init__(self, sdk: str):
        self.next_name, self.sdk = "", sdk
        self.exchanges: dict[str, dict] = {}

    async def request(self, request):
        body = json.loads(request.content) if request.content else None
        headers = {k: v for k, v in request.headers.items() if k.lower() in KEPT_HEADERS}
        self.exchanges[self.next_name] = {"method": request.method, "path": request.url.path,
                                          "headers": headers, "json": body, "recorded_with": self.sdk}

    async def response(self, response):
        self.exchanges[self.next_name]["status"] = response.status_code


async def _client(base: str, token: str, out: Path) -> None:
    import httpx
    from importlib.metadata import version
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.types import Message, Part, Role, TaskQueryParams, TextPart

    rec = Recorder(f"a2a-sdk {version('a2a-sdk')}")
    hooks = {"request": [rec.request], "response": [rec.response]}
    names: dict[str, str] = {token: "TOKEN"}

    def message(text: str, sender: str | None = None) -> Message:
        msg = Message(role=Role.user, message_id=os.urandom(16).hex(), parts=[Part(root=TextPart(text=text))],
                      metadata={"sender": sender} if sender else None)
        names[msg.message_id] = "MESSAGE_ID"
        return msg

    async def first(events):
        async for event in events:
            return event[0] if isinstance(event, tuple) else event

    async with httpx.AsyncClient(timeout=60, event_hooks=hooks) as public:
        for name, path in (("card_new", "/.well-known/agent-card.json"), ("card_old", "/.well-known/agent.json")):
            rec.next_name = name
            card = await A2ACardResolver(public, base, agent_card_path=path).get_agent_card()
        # the known party: its token, and polling (message/send does not wait for the agent's answer)
        async with httpx.AsyncClient(timeout=60, event_hooks=hooks,
                                     headers={"Authorization": f"Bearer {token}"}) as known:
            client = ClientFactory(ClientConfig(httpx_client=known, streaming=False, polling=True)).create(card)
            rec.next_name = "message_send"
            task = await first(client.send_message(message("hello from a 0.3 client")))
            names[task.id] = "TASK_ID"
            rec.next_name = "tasks_get"
            await client.get_task(TaskQueryParams(id=task.id))
        # an unknown party: no token, a claimed sender; its message is held for the person
        client = ClientFactory(ClientConfig(httpx_client=public, streaming=False)).create(card)
        rec.next_name = "message_send_unknown"
        held = await first(client.send_message(message("hello from an unknown 0.3 client", SENDER)))
        names[held.id] = "TASK_ID"
        rec.next_name = "tasks_get_unknown"
        await client.get_task(TaskQueryParams(id=held.id))
        streaming = ClientFactory(ClientConfig(httpx_client=public, streaming=True)).create(card)
        rec.next_name = "message_stream_unknown"
        [_ async for _ in streaming.send_message(message("a stream from an unknown 0.3 client", SENDER))]
    for name, exchange in rec.exchanges.items():
        body = exchange["json"]
        if isinstance(body, dict) and "id" in body:
            names[str(body["id"])] = "REQUEST_ID"
        (out / f"{name}.json").write_text(json.dumps(_placeholders(exchange, names), indent=2, sort_keys=True) + "\n")
        print(f"{name}: {exchange['method']} {exchange['path']} -> {exchange.get('status')}")


# --- the node side: runs with this project's Python -------------------------------------------------

def _node(home: Path, env: dict, *args: str, **kw):
    return subprocess.run([sys.executable, "-m", "meshnode", "--home", str(home), *args], env=env, check=True,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120, **kw).stdout


def _record(sdk_python: str) -> None:
    with tempfile.TemporaryDirectory() as root:
        home = Path(root) / "ada"
        env = {k: v for k, v in os.environ.items() if not k.startswith("MESHNODE_")}
        env.update({"HOME": root, "PYTHONPATH": str(REPO), "MESHNODE_WEB_LISTEN": "127.0.0.1:0",
                    "MESHNODE_NET_LISTEN": "/ip4/127.0.0.1/tcp/0"})
        _node(home, env, "init", "--name", "ada")
        token = _node(home, env, "a2a", "token", "add", "friend").strip()
        proc = subprocess.Popen([sys.executable, "-m", "meshnode", "--home", str(home), "run"], env=env, text=True,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            url, deadline = None, time.monotonic() + 60
            for line in proc.stdout:
                if line.startswith("web:"):
                    url = line.split()[1].rstrip("/")
                if line.startswith("ready") or time.monotonic() > deadline:
                    break
            if url is None:
                raise SystemExit("the node did not start its web server")
            subprocess.run([sdk_python, __file__, "--client", url, token], check=True, timeout=300)
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdk-python", help="a Python with a2a-sdk 0.3.x installed (the client)")
    parser.add_argument("--client", nargs=2, metavar=("URL", "TOKEN"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        asyncio.run(_client(*args.client, HERE))
    elif args.sdk_python:
        _record(args.sdk_python)
    else:
        parser.error("name the client's Python: --sdk-python")


if __name__ == "__main__":
    main()
