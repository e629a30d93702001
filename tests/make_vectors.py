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

from meshnode.container import build_container, cbor, decode_container
from meshnode.container.model import container_did_for, payload_hash_for
from meshnode.container.timefmt import format_ms, parse_ms
from meshnode.identity.keys import NodeKey

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
        ("binary payload", SEED_C, build_container(
            c, "x_blob", b"\x00\x01\x02binary\xff", timestamp_ms=T0 + 4, payload_type="binary")),
        ("side blocks are unsigned and kept", SEED_A, build_container(
            a, "note", NOTE, timestamp_ms=T0 + 5,
            side={"relay_chain": [{"relay_did": b.did, "timestamp": format_ms(T0 + 6)}],
                  "evaluations": {"items": []}})),
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
    add("too_deep", "arrays nested 40 deep (limit 32)", b"\x81" * 40 + b"\x01")
    add("too_large", "a byte string over the 262144-byte limit", cbor2.dumps(b"\x00" * 262_145))
    add("bad_structure", "not a map", cbor2.dumps([1, 2, 3]))
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
            "limits": {"max_bytes": 262144, "max_depth": 32, "clock_skew_seconds": 300}}
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
