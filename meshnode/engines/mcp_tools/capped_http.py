"""The HTTP client of a streamable-HTTP MCP server, with the size of what it answers bounded.

The SDK reads a JSON answer whole (``response.aread()``, no limit): a hostile
or broken server could fill the node's memory. Here every non-SSE response's
body passes through a counter: past ``MAX_BODY`` the read ends with a
``StreamError``, which the SDK turns into a JSON-RPC parse error for that
request (the call fails, the node goes on). An SSE stream is long-lived and
the SDK bounds each of its events itself (``max_sse_event_size``, 1 MiB).
The SDK's own timeouts are kept.
"""

from __future__ import annotations

import httpx2
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

MAX_BODY = 4 << 20  # as transport.MAX_LINE: one JSON-RPC message


def client(headers: dict[str, str], limit: int = MAX_BODY) -> httpx2.AsyncClient:
    """``create_mcp_http_client`` with a transport that caps response bodies at ``limit`` bytes."""
    return httpx2.AsyncClient(headers=headers, transport=CappedTransport(httpx2.AsyncHTTPTransport(), limit),
                              timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT))


class CappedTransport(httpx2.AsyncBaseTransport):
    def __init__(self, inner: httpx2.AsyncBaseTransport, limit: int):
        self.inner, self.limit = inner, limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        if not response.headers.get("content-type", "").lower().startswith("text/event-stream"):
            response.stream = CappedStream(response.stream, self.limit)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class CappedStream(httpx2.AsyncByteStream):
    """A body of at most ``limit`` bytes."""

    def __init__(self, inner, limit: int):
        self.inner, self.limit = inner, limit

    async def __aiter__(self):
        count = 0
        async for chunk in self.inner:
            count += len(chunk)
            if count > self.limit:
                raise httpx2.StreamError(f"the server sent more than {self.limit} bytes in one answer")
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()
