"""``POST /a2a`` behind the face: a2a-sdk's JSON-RPC dispatcher over ``MeshRequestHandler``, with the
party the face identified in each call's context. Built by the face at the first request that reaches
it: a2a-sdk, and what its routes bring, is loaded then and not when the node starts."""

from __future__ import annotations

from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from starlette.requests import Request

from meshnode.faces.a2a.delivery import Conversations
from meshnode.faces.a2a.handler import MeshRequestHandler
from meshnode.base.config.a2a import A2ASettings


class PartyContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's call context, with the party the face identified (the handler decides by it)."""

    def build(self, request: Request):
        context = super().build(request)
        context.state["party"] = request.scope["meshnode_a2a_party"]
        return context


def dispatcher(services, settings: A2ASettings, conversations: Conversations) -> JsonRpcDispatcher:
    """The dispatcher whose handler delivers through the face's ``conversations``."""
    handler = MeshRequestHandler(services, settings, conversations)
    return JsonRpcDispatcher(handler, context_builder=PartyContextBuilder(), enable_v0_3_compat=True)
