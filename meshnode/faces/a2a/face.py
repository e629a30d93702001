"""The A2A routes in front of the web app (protocols/a2a.md): ``GET /.well-known/agent-card.json``
and its older name ``/.well-known/agent.json`` (public) and ``POST /a2a`` (JSON-RPC, a2a-sdk's
dispatcher with our trio handler).

These requests skip the notebook's Guard (no session, no Origin rule: other agents are not browsers)
but get the same Host check (DNS rebinding), the JSON content type, a body size limit (``[a2a]
max_body_bytes``), the security headers and a count in ``a2a_requests{route,status}``. ``/a2a`` is
rate-limited before the dispatcher sees the request (only the claimed sender is read from the body;
an unknown party's request takes from its address's bucket before the body is read at all, and the
body must arrive within BODY_SECONDS): a flood is refused with HTTP 429 and the JSON-RPC error -32029
``rate_limited``; an unknown party's message when its share of the held queue (per party, address,
subnet: records.a2a.held_queue) or the queue is full with 429 ``held_full`` and a Retry-After of
minutes. A bearer token that is no known party's (wrong, or withdrawn) is refused with 401 before the
body is read, never taken for an unknown party; a party or address the person blocked gets 403 (an
address, or a known party's token, before the body is read), checked in memory (the node's BlockSet,
records.a2a.blocks: a flood from a blocked address costs no read of the store).
Behind a reverse proxy listed in ``[a2a] trusted_proxies`` the client is its X-Forwarded-For's last hop.
Every other request goes to the notebook unchanged.

a2a-sdk is loaded at the first request that needs it: the card's (card.py) or a call that reaches the
dispatcher (rpc.py). What the face does before (Host check, limits, body reading, the held queue's cap)
and the delivery of approved messages (delivery.py) need none of it.
"""

from __future__ import annotations

import json
import logging

import trio
from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.responses import JSONResponse

from meshnode.faces.a2a import CARD_PATH, OLD_CARD_PATH, RPC_PATH
from meshnode.faces.a2a.admission import KnownParties, Party, RateLimiter, bucket_of, client_of, sender_of, shares_of
from meshnode.faces.a2a.delivery import Conversations
from meshnode.base.config.a2a import a2a_settings
from meshnode.base.config.web import LOOPBACK_NAMES, SECURITY_HEADERS
from meshnode.base.lazy import import_in_thread
from meshnode.records.a2a import blocks, held_queue
from meshnode.records.a2a.blocks import BlockSet

log = logging.getLogger("meshnode.faces.a2a")
RATE_LIMITED = -32029  # JSON-RPC server error range: this client or sender sends too often
SENDS = ("SendMessage", "SendStreamingMessage", "message/send", "message/stream")  # v1.0 and v0.3 names
READ_FACTOR = 20
MAX_CARDS = 16
BODY_SECONDS = 30  # a request body slower than this is refused (408): Hypercorn's read_timeout stays None,
# as it would cut the notebook's event streams whose clients send nothing
UNAUTHORIZED = -32001  # a bearer token that is no known party's (JSON-RPC server error range)
BLOCKED = -32003  # a party or address the person blocked
CARD_PATHS = (CARD_PATH, OLD_CARD_PATH)
PATHS = (*CARD_PATHS, RPC_PATH)
SDK_MODULES = ("meshnode.faces.a2a.card", "meshnode.faces.a2a.rpc")  # what needs a2a-sdk: loaded at the first request
HEADERS = {**SECURITY_HEADERS, "cache-control": "no-store"}
UNSIGNED = (" [unsigned: this card was fetched at an address the node is not configured with (its URL comes"
            " from the request's Host); trust it only from [a2a] public_url or a name in [web] hosts]")


def vouched_host(host: str, listen_host: str, hosts: list[str]) -> bool:
    """Whether the node signs a card whose URL is ``host`` (a Host the Guard accepted): a name in ``[web]
    hosts``, a loopback name or the bound address, never merely an IP literal a wildcard listener
    accepts (anyone can send ``Host: <their address>`` and re-host the signed card to catch tokens)."""
    host = host.lower()
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    bound = [] if listen_host in ("0.0.0.0", "::") else [listen_host.lower(), f"[{listen_host.lower()}]"]
    return host in hosts or name in hosts or name in LOOPBACK_NAMES or name in bound


class A2AFace:
    def __init__(self, services, web_auth, guard, blocks: BlockSet | None = None):
        """``blocks``: the running node's (the actions change it); a face given none loads its own
        from the store at its first request."""
        self.services, self.guard = services, guard
        self.blocks = blocks if blocks is not None else BlockSet()
        self.settings = a2a_settings(services.config.values)
        self.body_limit = self.settings.max_body_bytes
        self.known = KnownParties(services.config.home / self.settings.known_tokens_path, web_auth)
        self.unknown_limit = RateLimiter(self.settings.rate_per_minute, self.settings.burst)
        self.read_limit = RateLimiter(self.settings.rate_per_minute * READ_FACTOR, self.settings.burst * READ_FACTOR)
        self.known_limit = RateLimiter(self.settings.known_rate_per_minute, max(self.settings.burst, 10))
        self.trusted = frozenset(self.settings.trusted_proxies)
        self.shares = shares_of(self.settings)
        self._holding = trio.Lock()  # one unknown party's message at a time from the shares' check to its hold
        self.conversations = Conversations(services, self.settings, self.blocks.match)
        self._cards: dict[str, tuple[tuple, dict]] = {}
        self._dispatcher = None

    def dispatcher(self):
        """a2a-sdk's JSON-RPC dispatcher over our handler, built at the first call that reaches it."""
        if self._dispatcher is None:
            from meshnode.faces.a2a.rpc import dispatcher

            self._dispatcher = dispatcher(self.services, self.settings, self.conversations)
        return self._dispatcher

    def wrap(self, app):
        """The ASGI app to serve: A2A paths here, the rest to ``app`` (the notebook)."""
        if not self.settings.enabled:
            return app

        async def serve(scope, receive, send):
            if scope["type"] != "http" or scope["path"] not in PATHS:
                return await app(scope, receive, send)
            await self.handle(scope, receive, send)
        return serve

    def card(self, base_url: str, vouched: bool = True) -> dict:
        """The signed card for ``base_url``, signed again only when what it says changed (a flood of
        card fetches costs a lookup, not a signature); unsigned, and saying so, when ``base_url`` is
        taken from a Host the node does not vouch for (``vouched_host``) and no ``public_url`` is set."""
        mesh, net = self.services.mesh, self.services.config.values["net"]
        announced = getattr(mesh, "_announce", None)  # what the node last announced (with the agent's tags)
        payload = announced.payload if announced is not None else {}
        url = self.settings.public_url.rstrip("/") or base_url
        interests = list(payload.get("interests", net["interests"]))
        expertise = list(payload.get("expertise", net["expertise"]))
        said = (url, tuple(interests), tuple(expertise))
        cached = self._cards.get(url)
        if cached is not None and cached[0] == said:
            return cached[1]
        from meshnode.faces.a2a import card as cards  # a2a-sdk's types and signing: at the first card asked for

        key = self.services.key
        card = cards.build_card(name=self.services.config.name, did=key.did, description=self.settings.description,
                                base_url=url, interests=interests, expertise=expertise)
        if not (vouched or self.settings.public_url):
            card.description += UNSIGNED
            return cards.card_dict(card)
        signed = cards.card_dict(cards.sign_card(card, key.seed(), key.did))
        if len(self._cards) >= MAX_CARDS:  # a Host per name the node answers to: a few at most
            self._cards.clear()
        self._cards[url] = (said, signed)
        return signed

    async def handle(self, scope, receive, send):
        headed = _Headed(send, HEADERS)
        try:
            response = await self._respond(scope, receive)
            await response(scope, receive, headed)
        finally:
            self.services.metrics.inc("a2a_requests", route=scope["path"], status=str(headed.status))

    async def _respond(self, scope, receive):
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if not self.guard.host_ok(host):
            return _error(421, None, -32600, f"Host {host[:100]!r} is not this node's; add it to [web] hosts")
        method, path = scope["method"], scope["path"]
        await import_in_thread(*SDK_MODULES)  # a2a-sdk, at the first request: off the event loop
        if path in CARD_PATHS:
            if method not in ("GET", "HEAD"):
                return _error(405, None, -32600, "the card is read with GET")
            vouched = vouched_host(host, self.guard.listen_host, self.guard.hosts)
            response = JSONResponse(self.card(f"{scope.get('scheme', 'http')}://{host}", vouched))
            response.headers["access-control-allow-origin"] = "*"  # public: any agent's page may read it
            return response
        if method != "POST":
            return _error(405, None, -32600, "A2A JSON-RPC is a POST")
        if headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            return _error(415, None, -32600, "A2A JSON-RPC is sent as Content-Type: application/json")
        peer = self.identify(scope, headers, None)
        if not peer.known:  # before the body is read: a flood of bodies costs no reading
            wait = self.read_limit.take(f"addr:{bucket_of(peer.client)}", self.services.now() / 1000)
            if wait:
                return self._refuse(peer, None, wait, False)
            bad_token = self.token_refusal(headers)
            if bad_token:
                return self._unauthorized(bad_token)
        if self.services.store is not None and await self._blocked(peer, named=peer.known):  # before the body
            return self._forbidden(None)
        body = None
        with trio.move_on_after(BODY_SECONDS) as slow:
            body = await _read_body(receive, self.body_limit)
        if slow.cancelled_caught:
            return _error(408, None, -32600, f"the request body did not arrive within {BODY_SECONDS} s")
        if body is None:
            return _error(413, None, -32600,
                          f"the request body is larger than [a2a] max_body_bytes ({self.body_limit})")
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None  # the dispatcher answers it (-32700)
        request_id = parsed.get("id") if isinstance(parsed, dict) and isinstance(parsed.get("id"), (str, int)) else None
        party = self.identify(scope, headers, parsed)
        sends = isinstance(parsed, dict) and parsed.get("method") in SENDS
        wait = self._limit(party, sends)
        if wait:
            return self._refuse(party, request_id, wait, sends)
        scope["meshnode_a2a_party"] = party
        if self.services.store is None:  # a face without a store (tests): nothing is blocked or held
            return await self.dispatcher().handle_requests(Request(scope, _replay(body, receive)))
        if not (sends and not party.known and self.settings.approve_unknown):
            refused = await self._admit(party, request_id, None)
            return refused or await self.dispatcher().handle_requests(Request(scope, _replay(body, receive)))
        async with self._holding:  # the shares' check and the hold as one: strangers cannot race past a full share
            refused = await self._admit(party, request_id, self.shares)
            return refused or await self.dispatcher().handle_requests(Request(scope, _replay(body, receive)))

    async def _admit(self, party: Party, request_id, shares: held_queue.Shares | None):
        """The refusal of a request the person blocked, or (``shares``: a message to be held) one whose
        share of the held queue is full; None: it goes on. Only the shares are read from the store."""
        if await self._blocked(party):
            return self._forbidden(request_id)
        if shares is None:
            return None
        full = await self.services.read(held_queue.refusal, party.key, party.client, self.services.now(), shares)
        return self._held_full(request_id, full) if full is not None else None

    async def _blocked(self, party: Party, named: bool = True) -> bool:
        """Whether the person blocked ``party``'s address or (``named``: its name is known, a known
        party's, or an unknown one's once its body was read) its name or key: in memory, the table
        read once by a face that was given no BlockSet."""
        if not self.blocks.loaded:
            self.blocks.fill(await self.services.read(blocks.listing))
        return self.blocks.match((party.name, party.key) if named else (), party.client) is not None

    def _forbidden(self, request_id):
        self.services.metrics.inc("a2a_blocked")
        return _error(403, request_id, BLOCKED, "blocked: the person of this node does not take requests"
                                                " from this party or address", {"type": "blocked"})

    def _refuse(self, party: Party, request_id, wait: float, sends: bool):
        self.services.metrics.inc("a2a_rate_limited", known=str(party.known).lower())
        if sends:  # a message refused (the body was read: it is known to be one)
            self.services.metrics.inc("a2a_messages", outcome="rate_limited")
        response = _error(429, request_id, RATE_LIMITED, f"rate_limited: too many requests from"
                          f" {'this token' if party.known else 'this address or sender'}; try again in"
                          f" {wait:.0f} s", {"type": "rate_limited", "retry_after_s": round(wait, 1)})
        response.headers["retry-after"] = str(max(1, round(wait)))
        return response

    def _held_full(self, request_id, full: held_queue.Refusal):
        self.services.metrics.inc("a2a_messages", outcome="held_full")
        self.services.metrics.inc("a2a_held_full", share=full.share)
        wait = max(1, round(full.retry_after_ms / 1000))
        response = _error(429, request_id, RATE_LIMITED, full.reason,
                          {"type": "held_full", "share": full.share, "retry_after_s": wait})
        response.headers["retry-after"] = str(wait)
        return response

    def token_refusal(self, headers: Headers) -> str | None:
        """Why a request's bearer token is refused (None: it carries none, or a known party's): a party
        that presents a token claims to be known, and a wrong or withdrawn one is told so (401), never
        served as an unknown party."""
        header = headers.get("authorization", "")
        if not header:
            return None
        if header[:7].lower() != "bearer ":
            return "the Authorization header is not a Bearer token"
        token = header[7:].strip()
        if self.known.name_of(token) is not None:
            return None
        if self.known.revoked(token) is not None:
            return "this token was withdrawn by the node's person"
        return "this token is not one the node's person issued"

    def _unauthorized(self, reason: str):
        self.services.metrics.inc("a2a_unauthorized")
        response = _error(401, None, UNAUTHORIZED, f"unauthorized: {reason}; send no Authorization header to"
                                                   " talk as an unknown party", {"type": "unauthorized"})
        response.headers["www-authenticate"] = 'Bearer realm="a2a", error="invalid_token"'
        return response

    def identify(self, scope, headers: Headers, body) -> Party:
        peer = scope["client"][0] if scope.get("client") else "unknown"
        client = client_of(peer, headers.get("x-forwarded-for"), self.trusted)
        header = headers.get("authorization", "")
        if header[:7].lower() == "bearer ":
            name = self.known.name_of(header[7:].strip())
            if name is not None:
                return Party(True, name, client)
        return Party(False, sender_of(body), client)

    def _limit(self, party: Party, sends: bool) -> float:
        """Seconds until ``party`` may send (0: now). A message counts against its address and its claimed
        sender; every call of an unknown party (tasks/get ..., and messages too) took one from a bucket
        READ_FACTOR times larger per address before its body was read."""
        now = self.services.now() / 1000
        if party.known:
            return self.known_limit.take(f"token:{party.name}", now)
        if not sends:  # taken already, before the body was read
            return 0.0
        address = f"addr:{bucket_of(party.client)}"
        by_address = self.unknown_limit.take(address, now)
        by_sender = self.unknown_limit.take(f"sender:{party.name}", now) if party.name != "anonymous" else 0.0
        return max(by_address, by_sender)

    async def run(self) -> None:
        """The face's own work in the web server's nursery: held messages a person approved go to the agent."""
        if self.settings.enabled:
            await self.conversations.deliver_approved()


class _Headed:
    """The ASGI ``send`` of a response: ``headers`` added to its start, its status kept."""

    def __init__(self, send, headers: dict):
        self.send, self.headers, self.status = send, headers, 0

    async def __call__(self, message):
        if message["type"] == "http.response.start":
            self.status = message["status"]
            MutableHeaders(scope=message).update(self.headers)
        await self.send(message)


async def _read_body(receive, limit: int) -> bytes | None:
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, then):
    """The body read already, then the client's own messages (a stream watches for its disconnect)."""
    sent = [False]

    async def receive():
        if sent[0]:
            return await then()
        sent[0] = True
        return {"type": "http.request", "body": body, "more_body": False}
    return receive


def _error(status: int, request_id, code: int, message: str, data: dict | None = None) -> JSONResponse:
    error = {"code": code, "message": message, **({"data": data} if data else {})}
    response = JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error}, status_code=status)
    if status in (408, 413):
        response.headers["connection"] = "close"
    return response
