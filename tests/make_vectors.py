"""Generate protocols/vectors/containers-{valid,invalid}.json.

Run ``python tests/make_vectors.py`` after a deliberate format change, review
the diff, and commit the new files; tests/test_vectors.py checks the
implementation against them (and ``--check`` here tells whether the files are
what the code would write now). Everything is fixed: seeds, times, payloads.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import cbor2

from meshnode.base.container import build_container, cbor, decode_container
from meshnode.base.container.model import DEFAULT_LIMITS, Limits, container_did_for, payload_hash_for
from meshnode.base.container.prescan import scan
from meshnode.base.container.timefmt import format_ms, parse_ms
from meshnode.base.identity.did import did_from_public_key
from meshnode.base.identity.keys import NodeKey

OUT = Path(__file__).resolve().parent.parent / "protocols" / "vectors"
T0 = parse_ms("2026-01-15T12:00:00.000Z")
NOW = parse_ms("2026-01-15T12:00:30.000Z")
SEED_A = bytes(32)  # the did:key spec's first test seed
SEED_B = bytes(31) + b"\x01"
SEED_C = bytes(range(32))


def key(seed: bytes) -> NodeKey:
    return NodeKey(seed)


def sign_hmp(k: NodeKey, hmp: dict, *, did: str | None = None) -> dict:
    """Sign an hmp_container whose head lacks the two derived fields; returns the envelope."""
    signed = cbor.encode(hmp)
    head = dict(hmp["head"], signature=k.sign(signed), container_did=did or container_did_for(signed))
    return {"hmp_container": dict(hmp, head=head)}


def base_hmp(k: NodeKey, payload: dict, cls: str = "note", **head_extra) -> dict:
    head = {
        "version": "1.2", "class": cls, "class_version": "1.0", "class_id": f"{cls}_v1.0",
        "schema": f"meshnode:class/{cls}/1.0", "sender_did": k.did, "timestamp": format_ms(T0),
        "payload_hash": payload_hash_for(cbor.encode(payload)), "sig_algo": "ed25519", "payload_type": "cbor",
    }
    head.update(head_extra)
    return {"head": head, "payload": payload}


NOTE = {"text": "Hello, Mesh!", "source": "cli", "audience": "public", "priority": 0}
WHOLE_FLOATS = {"count": 1, "ratio": 1.0}  # 1.0 is a float (f9 3c 00), 1 an integer (01)
L = 2**252 + 27742317777372353535851937790883648493  # the order of the Ed25519 base point
IDENTITY = b"\x01" + bytes(31)  # the neutral point (0, 1), order 1
ORDER_8 = bytes.fromhex("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a")  # a point of order 8


def whole_float_container():
    return build_container(key(SEED_C), "x_measure", WHOLE_FLOATS, timestamp_ms=T0 + 8,
                           head_extra={"confidence": 1.0})


_LAX = Limits(max_depth=64, max_items=1 << 20)  # to sign the vectors one step past a limit


def items_edge_container(extra: int):
    """A container of exactly max_items data items (plus ``extra``): a payload list of zeros."""
    base = build_container(key(SEED_C), "x_items", {"v": []}, timestamp_ms=T0 + 9)
    k = DEFAULT_LIMITS.max_items - scan(base.to_bytes(), 1 << 20, 64) + extra
    c = build_container(key(SEED_C), "x_items", {"v": [0] * k}, timestamp_ms=T0 + 9, limits=_LAX)
    assert scan(c.to_bytes(), 1 << 20, 64) == DEFAULT_LIMITS.max_items + extra
    return c


def depth_edge_container(extra: int):
    """A container whose deepest item sits inside exactly max_depth arrays and maps (plus ``extra``):
    the payload's "v" value sits inside three (envelope, hmp_container, payload)."""
    value: object = 0
    for _ in range(DEFAULT_LIMITS.max_depth - 3 + extra):
        value = [value]
    return build_container(key(SEED_C), "x_nested", {"v": value}, timestamp_ms=T0 + 10, limits=_LAX)


def _k(r: bytes, public_key: bytes, message: bytes) -> int:
    return int.from_bytes(hashlib.sha512(r + public_key + message).digest(), "little") % L


def _unsigned(public_key: bytes, payload: dict, timestamp_ms: int = T0) -> tuple[dict, bytes]:
    """An hmp_container from the did:key of ``public_key`` (head without its two derived fields), and its signed bytes."""
    hmp = base_hmp(key(SEED_A), payload, timestamp=format_ms(timestamp_ms))
    hmp["head"]["sender_did"] = did_from_public_key(public_key)
    return hmp, cbor.encode(hmp)


def _with_signature(hmp: dict, signed: bytes, signature: bytes) -> bytes:
    head = dict(hmp["head"], signature=signature, container_did=container_did_for(signed))
    return _enc({"hmp_container": dict(hmp, head=head)})


def small_order_signatures() -> list[tuple[str, bytes]]:
    """Signatures that satisfy the Ed25519 equation [S]B = R + [k]A (and its cofactored form
    [8][S]B = [8]R + [8][k]A) through small-order points: verifiers that skip libsodium's
    small-order checks accept them. Each is (description, container)."""
    out = []
    # 1. key = the identity point, R = the identity, S = 0: holds for every message
    hmp, signed = _unsigned(IDENTITY, NOTE)
    out.append(("sender key is the identity point (small order) with R = identity, S = 0:"
                " [S]B = R + [k]A holds for any message", _with_signature(hmp, signed, IDENTITY + bytes(32))))
    # 2. key = a point of order 8, R = identity, S = 0: the cofactored equation always holds, the
    #    plain one when k is a multiple of 8 (the timestamp is stepped until it is)
    for step in range(1000):
        hmp, signed = _unsigned(ORDER_8, NOTE, T0 + step)
        if _k(IDENTITY, ORDER_8, signed) % 8 == 0:
            break
    out.append(("sender key is a point of order 8 with R = identity, S = 0 (k is a multiple of 8):"
                " both equations hold", _with_signature(hmp, signed, IDENTITY + bytes(32))))
    # 3. the sender's real key, R = the identity (nonce r = 0), S = k*a: a signature only the key's
    #    holder can make, but with a small-order R (and it reveals the private scalar: a = S/k)
    a_key = key(SEED_A)
    hmp, signed = _unsigned(a_key.public_key, NOTE)
    h = hashlib.sha512(SEED_A).digest()
    a = (int.from_bytes(h[:32], "little") & ((1 << 254) - 8)) | (1 << 254)  # RFC 8032 5.1.5 clamping
    s = _k(IDENTITY, a_key.public_key, signed) * a % L
    out.append(("the sender's own key, but R is the identity point (S = k*a):"
                " both equations hold", _with_signature(hmp, signed, IDENTITY + s.to_bytes(32, "little"))))
    return out


def valid_vectors() -> list[dict]:
    a, b, c = key(SEED_A), key(SEED_B), key(SEED_C)
    made = [
        ("minimal note", SEED_A, build_container(a, "note", NOTE, timestamp_ms=T0)),
        ("note with topic, mentions, hashtags, meta and tags", SEED_B, build_container(
            b, "note", {"text": "Привет, @alice! #mesh #hmp", "topic": "greetings", "mentions": ["alice"],
                        "hashtags": ["mesh", "hmp"], "source": "user", "audience": "friends", "priority": 3},
            timestamp_ms=T0 + 1, meta={"created_by": "AGENT"}, tags=["chat", "greeting"])),
        ("diary entry replying to the minimal note, with a float confidence", SEED_C, build_container(
            c, "diary_entry", {"title": "first", "topics": ["mesh"], "content": "Observed a greeting.",
                               "summary": "a greeting"},
            timestamp_ms=T0 + 2, related={"in_reply_to": [build_container(a, "note", NOTE, timestamp_ms=T0).did]},
            head_extra={"confidence": 0.75})),
        ("unknown class: valid, kept, known_class false", SEED_A, build_container(
            a, "x_experiment", {"n": 1, "nested": {"list": [1, -2, 3.5, True, None, b"\x00\xff"]}},
            timestamp_ms=T0 + 3)),
        ("expired container (ttl in the past): valid but marked expired", SEED_B, build_container(
            b, "heartbeat", {"seq": 7}, timestamp_ms=T0, ttl_ms=T0 + 10_000)),
        ("known class with an encrypted payload: the class schema cannot be checked", SEED_B, build_container(
            b, "note", b"\x8f\x01opaque-ciphertext", timestamp_ms=T0 + 7, payload_type="encrypted+cbor")),
        ("whole-number floats stay floats: payload ratio 1.0 and head confidence 1.0 are f9 3c 00,"
         " payload count 1 is the integer 01", SEED_C, whole_float_container()),
        ("binary payload", SEED_C, build_container(
            c, "x_blob", b"\x00\x01\x02binary\xff", timestamp_ms=T0 + 4, payload_type="binary")),
        ("side blocks are unsigned and kept", SEED_A, build_container(
            a, "note", NOTE, timestamp_ms=T0 + 5,
            side={"relay_chain": [{"relay_did": b.did, "timestamp": format_ms(T0 + 6)}],
                  "evaluations": {"items": []}})),
        (f"exactly max_items ({DEFAULT_LIMITS.max_items}) data items: the item limit's edge passes", SEED_C,
         items_edge_container(0)),
        (f"an item inside exactly max_depth ({DEFAULT_LIMITS.max_depth}) arrays and maps: the depth limit's edge"
         " passes", SEED_C, depth_edge_container(0)),
    ]
    out = []
    for description, seed, c in made:
        c = decode_container(c.to_bytes(), now_ms=NOW)  # the flags a verifier sees at `now`
        head = c.head
        signed = dict(c.hmp, head={k: v for k, v in head.items() if k not in ("signature", "container_did")})
        out.append({
            "description": description,
            "seed": seed.hex(),
            "sender_did": c.sender_did,
            "peer_id": NodeKey(seed).peer_id,
            "container": c.to_bytes().hex(),
            "signed_bytes": cbor.encode(signed).hex(),
            "payload_bytes": cbor.encode(c.payload).hex(),
            "payload_hash": head["payload_hash"],
            "signature": head["signature"].hex(),
            "container_did": c.did,
            "now": format_ms(NOW),
            "expect": {"expired": c.expired, "known_class": c.known_class, "class": c.cls},
        })
    return out


def _enc(envelope: dict) -> bytes:
    return cbor.encode(envelope)


def invalid_vectors() -> list[dict]:
    a, b = key(SEED_A), key(SEED_B)
    good = build_container(a, "note", NOTE, timestamp_ms=T0).to_bytes()
    cases: list[tuple[str, str, bytes, dict]] = []

    def add(code: str, description: str, data: bytes, **extra) -> None:
        cases.append((code, description, data, extra))

    flipped_sig = bytearray(good)
    sig = build_container(a, "note", NOTE, timestamp_ms=T0).signature
    i = bytes(flipped_sig).index(sig)
    flipped_sig[i + 10] ^= 0x01
    add("bad_signature", "one bit of the signature flipped", bytes(flipped_sig))
    add("bad_signature", "signed by another key than the sender's",
        _enc(_resign_as(base_hmp(a, NOTE), b, claimed=a)))
    env = sign_hmp(a, base_hmp(a, NOTE))
    env["hmp_container"]["payload"] = dict(NOTE, text="Hello, Mash!")
    add("payload_hash_mismatch", "payload changed after signing", _enc(env))
    add("future_timestamp", "timestamp ten minutes after `now` (skew is five)",
        _enc(sign_hmp(a, base_hmp(a, NOTE, timestamp=format_ms(NOW + 600_000)))))
    add("did_mismatch", "container_did names other content",
        _enc(sign_hmp(a, base_hmp(a, NOTE), did=container_did_for(b"other"))))
    add("bad_sender", "head.public_key is not the sender's key",
        _enc(sign_hmp(a, base_hmp(a, NOTE, public_key=b.public_key))))
    add("bad_sender", "sender_did is not a did:key",
        _enc(sign_hmp(a, base_hmp(a, NOTE, sender_did="did:hmp:agent123"))))
    add("unsupported_version", "head.version 1.1", _enc(sign_hmp(a, base_hmp(a, NOTE, version="1.1"))))
    add("unsupported_algorithm", "sig_algo rsa", _enc(sign_hmp(a, base_hmp(a, NOTE, sig_algo="rsa"))))
    add("bad_field", "class_id spelled with a dash (HMP section 7.2 style)",
        _enc(sign_hmp(a, base_hmp(a, NOTE, class_id="note-v1.0"))))
    add("bad_field", "timestamp without milliseconds",
        _enc(sign_hmp(a, base_hmp(a, NOTE, timestamp="2026-01-15T12:00:00Z"))))
    add("bad_field", "timestamp written with Arabic-Indic digits",
        _enc(sign_hmp(a, base_hmp(a, NOTE, timestamp="٢٠٢٦-01-15T12:00:00.000Z"))))
    add("bad_field", "payload_type 'encrypted' without a format",
        _enc(sign_hmp(a, base_hmp(a, NOTE, payload_type="encrypted"))))
    add("bad_field", "timestamp on February 30th",
        _enc(sign_hmp(a, base_hmp(a, NOTE, timestamp="2026-02-30T12:00:00.000Z"))))
    hmp = base_hmp(a, NOTE)
    del hmp["head"]["payload_type"]
    add("bad_structure", "required head field payload_type missing", _enc(sign_hmp(a, hmp)))
    add("bad_structure", "related value is a string, not an array",
        _enc(sign_hmp(a, dict(base_hmp(a, NOTE), related={"in_reply_to": "did:hmp:container:uEiAx"}))))
    add("bad_structure", "empty meta map", _enc(sign_hmp(a, dict(base_hmp(a, NOTE), meta={}))))
    # a decoder that turns the whole-number float 1.0 into the integer 1 breaks the bytes signed
    floats = whole_float_container().to_bytes()
    in_head = bytes.fromhex("6a636f6e666964656e6365f93c00")  # "confidence": 1.0
    assert floats.count(in_head) == 1
    add("bad_signature", "the whole-float vector with head confidence 1.0 re-encoded as the integer 1",
        floats.replace(in_head, in_head[:-3] + b"\x01"))
    in_payload = bytes.fromhex("65726174696ff93c00")  # "ratio": 1.0
    assert floats.count(in_payload) == 1
    add("payload_hash_mismatch", "the whole-float vector with payload ratio 1.0 re-encoded as the integer 1",
        floats.replace(in_payload, in_payload[:-3] + b"\x01"))
    for description, data in small_order_signatures():
        add("bad_signature", description, data, lax_ed25519_accepts=True)
    # items of array fields: a wrong CBOR type is bad_structure, a wrong value bad_field
    target = container_did_for(b"target")
    for code, description, field, value in (
            ("bad_structure", "a related item is an integer, not text", "related", {"in_reply_to": [target, 7]}),
            ("bad_field", "a related item is text but not a DID", "related", {"in_reply_to": ["in reply to you"]}),
            ("bad_field", "a related value is an empty array", "related", {"in_reply_to": []}),
            ("bad_structure", "a tags item is an integer, not text", "tags", ["mesh", 7]),
            ("bad_field", "a tags item is longer than 64 characters", "tags", ["x" * 65]),
            ("bad_structure", "a recipient item is a byte string, not text", "recipient", [b"did:key:z6Mk"]),
            ("bad_field", "a recipient item is text but not a DID", "recipient", ["bob"])):
        hmp = base_hmp(a, NOTE)
        if field == "related":
            hmp["related"] = value
        else:
            hmp["head"][field] = value
        add(code, description, _enc(sign_hmp(a, hmp)))
    add("class_schema", "note without its required audience",
        _enc(sign_hmp(a, base_hmp(a, {k: v for k, v in NOTE.items() if k != "audience"}))))
    # encoding-level cases: hand-made bytes around the good container
    add("malformed_cbor", "truncated by one byte", good[:-1])
    add("malformed_cbor", "trailing byte after the item", good + b"\x00")
    add("malformed_cbor", "empty input", b"")
    add("non_deterministic", "integer 1 in a two-byte form", bytes.fromhex("a1616118 01".replace(" ", "")))
    add("non_deterministic", "map keys out of order", bytes.fromhex("a2626262016161 02".replace(" ", "")))
    add("non_deterministic", "indefinite-length array", bytes.fromhex("9f01ff"))
    add("non_deterministic", "float 1.5 as float64 instead of float16", bytes.fromhex("fb3ff8000000000000"))
    add("duplicate_key", "a map with key 'a' twice", bytes.fromhex("a2616101616102"))
    add("forbidden_type", "a CBOR tag (epoch date)", bytes.fromhex("c11a514b67b0"))
    add("forbidden_type", "undefined", bytes.fromhex("f7"))
    add("forbidden_type", "integer map key", bytes.fromhex("a10101"))
    add("forbidden_type", "simple value 16 (well-formed, not allowed)", bytes.fromhex("a16161f0"))
    # not well-formed: reserved additional information (28 to 30) in the tag and simple/float
    # major types, as in every other; no indefinite form for a tag; a two-byte simple value < 32
    add("malformed_cbor", "tag head with reserved additional information 28 (0xdc)", bytes.fromhex("a16161dc00"))
    add("malformed_cbor", "major type 7 with reserved additional information 30 (0xfe)", bytes.fromhex("a16161fe"))
    add("malformed_cbor", "tag head with additional information 31 (0xdf: no indefinite tags)",
        bytes.fromhex("a16161df00"))
    add("malformed_cbor", "simple value 20 in the two-byte form (f8 14)", bytes.fromhex("a16161f814"))
    add("too_deep", "arrays nested 40 deep (limit 32)", b"\x81" * 40 + b"\x01")
    add("too_large", "a byte string over the 262144-byte limit", cbor2.dumps(b"\x00" * 262_145))
    add("bad_structure", "not a map", cbor2.dumps([1, 2, 3]))
    add("too_many_items", f"one data item over max_items ({DEFAULT_LIMITS.max_items}), otherwise valid",
        items_edge_container(1).to_bytes())
    add("too_deep", f"an item inside max_depth + 1 ({DEFAULT_LIMITS.max_depth + 1}) arrays and maps, otherwise"
        " valid", depth_edge_container(1).to_bytes())
    out = []
    for code, description, data, extra in cases:
        out.append({"description": description, "container": data.hex(), "now": format_ms(NOW),
                    "expect_error": code, **extra})
    return out


def _resign_as(hmp: dict, signer: NodeKey, claimed: NodeKey) -> dict:
    env = sign_hmp(signer, hmp)
    assert env["hmp_container"]["head"]["sender_did"] == claimed.did
    return env


def render() -> dict[str, str]:
    meta = {"format": "meshnode container test vectors", "spec": "protocols/container.md",
            "limits": {"max_bytes": 262144, "max_depth": 32, "max_items": DEFAULT_LIMITS.max_items,
                       "clock_skew_seconds": 300}}
    return {
        "containers-valid.json": json.dumps({**meta, "vectors": valid_vectors()}, indent=2, ensure_ascii=False) + "\n",
        "containers-invalid.json": json.dumps({**meta, "vectors": invalid_vectors()}, indent=2,
                                              ensure_ascii=False) + "\n",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if the files differ from what would be written")
    args = parser.parse_args()
    stale = []
    for name, text in render().items():
        path = OUT / name
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path} ({hashlib.sha256(text.encode()).hexdigest()[:12]})")
    if stale:
        print("stale:", ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
