"""The agent card (protocols/a2a.md section 2): who the agent is, what it knows, where to reach it,
signed with the node's Ed25519 key as a JWS (EdDSA) whose ``kid`` is the node's did:key key id
(``<did>#<multibase key>``), so a client checks it against the DID alone: ``verify_card(card, did)``.

The signature is the A2A one (a2a-sdk ``create_agent_card_signer``: RFC 8785 canonical JSON of the
card without ``signatures``, detached payload); it covers the card's A2A 1.0 fields. The DID is also
in the card, as the params of the extension ``DID_EXTENSION``, and must match the one checked.

The card is served in both shapes at once: the A2A 1.0 fields (``supportedInterfaces``: the JSON-RPC
endpoint as 1.0 and, at the same URL, as 0.3), and the 0.3 fields a 0.3 client reads (``url``,
``protocolVersion``, ``preferredTransport``, made from the 0.3 interface by a2a-sdk's compatibility
layer); a 1.x client picks the 1.0 interface, a 0.3 client the top-level ``url``.
"""

from __future__ import annotations

import json
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from google.protobuf.json_format import ParseDict, ParseError
from google.protobuf.struct_pb2 import Struct

from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types import AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentSkill
from a2a.utils.signing import SignatureVerificationError, create_agent_card_signer, create_signature_verifier

from meshnode.faces.a2a import CARD_PATH, RPC_PATH  # (named here too: a client reads them with the card's helpers)
from meshnode.base.errors import IdentityError, MeshnodeError
from meshnode.base.identity.did import public_key_from_did
DID_EXTENSION = "https://meshnode.dev/a2a/ext/did-key/v1"  # params: {"did": the node's did:key}
ALGORITHMS = ["EdDSA"]
MAX_CARD_BYTES = 256 * 1024
MAX_SKILLS = 64
PROTOCOL_V03 = "0.3.0"  # what the 0.3 shape says it speaks (the /a2a endpoint takes 0.3 method names too)


class CardError(MeshnodeError):
    """A card that is not this DID's, is not a card, or whose signature does not check."""


def key_id(did: str) -> str:
    """The did:key verification method id: ``did:key:z6Mk...#z6Mk...``."""
    return f"{did}#{did.rsplit(':', 1)[-1]}"


def skills_of(interests: list[str], expertise: list[str]) -> list[AgentSkill]:
    """One skill per announced expertise and interest (tags as announced, at most MAX_SKILLS)."""
    out = [AgentSkill(id="conversation", name="conversation", tags=["chat"],
                      description="talk with the agent: your message goes into its conversation, it answers")]
    seen = set()
    for kind, tags in (("expertise", expertise), ("interest", interests)):
        for tag in tags:
            if tag in seen or len(out) >= MAX_SKILLS:
                continue
            seen.add(tag)
            out.append(AgentSkill(id=f"{kind}:{tag}", name=tag, tags=[tag, kind],
                                  description=f"{'knows' if kind == 'expertise' else 'interested in'} {tag}"
                                              " (as announced on the mesh)"))
    return out


def build_card(*, name: str, did: str, description: str, base_url: str, interests: list[str],
               expertise: list[str], streaming: bool = True) -> AgentCard:
    """The unsigned card of the agent reachable at ``base_url`` (no trailing slash)."""
    params = Struct()
    params.update({"did": did, "key_id": key_id(did)})
    return AgentCard(
        name=name, version="1.0", description=description or f"the meshnode agent {name} ({did})",
        supported_interfaces=[AgentInterface(url=base_url + RPC_PATH, protocol_binding="JSONRPC",
                                             protocol_version="1.0"),
                              AgentInterface(url=base_url + RPC_PATH, protocol_binding="JSONRPC",
                                             protocol_version=PROTOCOL_V03)],
        capabilities=AgentCapabilities(streaming=streaming, push_notifications=False, extensions=[
            AgentExtension(uri=DID_EXTENSION, description="the agent's did:key; the card is signed by its key",
                           required=False, params=params)]),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        skills=skills_of(interests, expertise))


def sign_card(card: AgentCard, seed: bytes, did: str) -> AgentCard:
    """``card`` with one more signature: EdDSA by the key of ``seed``, kid = ``key_id(did)``."""
    signer = create_agent_card_signer(Ed25519PrivateKey.from_private_bytes(seed),
                                      {"alg": "EdDSA", "kid": key_id(did), "typ": "JOSE"})
    return signer(card)


def card_dict(card: AgentCard) -> dict:
    """The card as served: A2A 1.0 JSON, with the 0.3 fields a2a-sdk's compatibility layer makes from
    its 0.3 interface (``url``, ``protocolVersion``, ``preferredTransport``)."""
    return agent_card_to_dict(card)


def did_of(card: AgentCard) -> str | None:
    for ext in card.capabilities.extensions:
        if ext.uri == DID_EXTENSION and "did" in ext.params.fields:
            return ext.params.fields["did"].string_value
    return None


def key_provider(did: str):
    """The a2a-sdk key provider for ``did``: the did:key's Ed25519 key for its own kid, nothing else
    (a card signed under another kid, or pointing to a key URL, is refused)."""
    try:
        raw = public_key_from_did(did)
    except (IdentityError, ValueError) as exc:
        raise CardError("bad_did", f"{did[:100]!r} is not an Ed25519 did:key: {exc}") from None
    public = Ed25519PublicKey.from_public_bytes(raw)

    def provide(kid: str | None, jku: str | None):
        if jku or kid not in (key_id(did), did):
            raise CardError("wrong_key", f"the card is signed under kid {str(kid)[:120]!r}, not {key_id(did)}")
        return public
    return provide


def verify_card(card_json: dict | str | bytes, did: str) -> AgentCard:
    """The card, when one of its signatures is ``did``'s key's and it names ``did``; else CardError
    (``not_a_card``, ``bad_signature``, ``wrong_did``). What a client calls after fetching the card."""
    if isinstance(card_json, (str, bytes)):
        if len(card_json) > MAX_CARD_BYTES:
            raise CardError("not_a_card", f"the card is larger than {MAX_CARD_BYTES} bytes")
        try:
            card_json = json.loads(card_json)
        except ValueError:
            raise CardError("not_a_card", "the card is not JSON") from None
    if not isinstance(card_json, dict):
        raise CardError("not_a_card", "the card is not a JSON object")
    try:
        card = ParseDict(card_json, AgentCard(), ignore_unknown_fields=True)
    except (ParseError, ValueError, TypeError) as exc:
        raise CardError("not_a_card", f"the card does not parse as an A2A AgentCard: {str(exc)[:200]}") from None
    verifier = create_signature_verifier(_refusing(key_provider(did)), ALGORITHMS)
    try:
        verifier(card)
    except SignatureVerificationError as exc:
        raise CardError("bad_signature", f"no signature of {did} on the card: {exc}") from None
    if did_of(card) != did:
        raise CardError("wrong_did", f"the card names {did_of(card)!r}, not {did}")
    return card


def _refusing(provide):
    """A provider whose refusal is a failed signature (the SDK goes on to the next one), not a crash."""
    from jwt.exceptions import InvalidKeyError

    def wrapped(kid: Any, jku: Any):
        try:
            return provide(kid, jku)
        except CardError as exc:
            raise InvalidKeyError(exc.reason) from None
    return wrapped
