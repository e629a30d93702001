"""The implementation against protocols/vectors/, checked independently where possible.

Valid vectors are checked three ways: meshnode decodes them; the hashes, the
signature, the DIDs and the deterministic encoding are recomputed here with
hashlib, PyNaCl, base64 and cbor2's own canonical mode (not meshnode's code);
and meshnode's builder reproduces the exact bytes from the seed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import cbor2
import pytest
from nacl.signing import SigningKey

from meshnode.base.container import ContainerError, build_container, decode_container, parse_ms
from meshnode.base.container.model import DEFAULT_LIMITS

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "protocols" / "vectors"
VALID = json.loads((VECTORS / "containers-valid.json").read_text(encoding="utf-8"))["vectors"]
INVALID = json.loads((VECTORS / "containers-invalid.json").read_text(encoding="utf-8"))["vectors"]


def test_vector_files_are_what_the_generator_writes():
    result = subprocess.run([sys.executable, str(ROOT / "tests" / "make_vectors.py"), "--check"],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_error_code_has_an_invalid_vector():
    from meshnode.base.container.errors import CODES

    assert {v["expect_error"] for v in INVALID} == set(CODES)


@pytest.mark.parametrize("v", VALID, ids=[v["description"] for v in VALID])
def test_valid_vector_decodes(v):
    data = bytes.fromhex(v["container"])
    c = decode_container(data, now_ms=parse_ms(v["now"]))
    assert c.did == v["container_did"]
    assert c.sender_did == v["sender_did"]
    assert c.expired == v["expect"]["expired"]
    assert c.known_class == v["expect"]["known_class"]
    assert c.cls == v["expect"]["class"]
    assert c.to_bytes() == data


@pytest.mark.parametrize("v", VALID, ids=[v["description"] for v in VALID])
def test_valid_vector_independently(v):
    data = bytes.fromhex(v["container"])
    envelope = cbor2.loads(data)
    # deterministic encoding, by cbor2's own canonical mode
    assert cbor2.dumps(envelope, canonical=True) == data
    hmp = envelope["hmp_container"]
    head = hmp["head"]
    payload_bytes = bytes.fromhex(v["payload_bytes"])
    assert cbor2.dumps(hmp["payload"], canonical=True) == payload_bytes
    assert head["payload_hash"] == v["payload_hash"] == "sha256:" + hashlib.sha256(payload_bytes).hexdigest()
    # signed bytes: hmp_container without the two derived head fields
    signed = dict(hmp, head={k: x for k, x in head.items() if k not in ("signature", "container_did")})
    signed_bytes = bytes.fromhex(v["signed_bytes"])
    assert cbor2.dumps(signed, canonical=True) == signed_bytes
    # the seed's key signs exactly these bytes (Ed25519 is deterministic)
    sk = SigningKey(bytes.fromhex(v["seed"]))
    assert sk.sign(signed_bytes).signature.hex() == v["signature"] == head["signature"].hex()
    # container DID: multibase base64url of the sha2-256 multihash of the signed bytes
    mh = b"\x12\x20" + hashlib.sha256(signed_bytes).digest()
    did = "did:hmp:container:u" + base64.urlsafe_b64encode(mh).decode().rstrip("=")
    assert did == v["container_did"] == head["container_did"]


@pytest.mark.parametrize("v", VALID, ids=[v["description"] for v in VALID])
def test_builder_reproduces_valid_vector(v):
    from meshnode.base.identity.keys import NodeKey

    c = decode_container(bytes.fromhex(v["container"]), now_ms=parse_ms(v["now"]))
    head = c.head
    optional = {k: head[k] for k in ("confidence",) if k in head}
    rebuilt = build_container(
        NodeKey(bytes.fromhex(v["seed"])), c.cls, c.payload, timestamp_ms=c.timestamp_ms,
        class_version=head["class_version"], meta=c.meta or None, related=c.related or None,
        payload_type=head["payload_type"], tags=head.get("tags"),
        ttl_ms=parse_ms(head["ttl"]) if "ttl" in head else None, head_extra=optional, side=c.side or None,
    )
    assert rebuilt.to_bytes().hex() == v["container"]


@pytest.mark.parametrize("v", INVALID, ids=[v["description"] for v in INVALID])
def test_invalid_vector_is_rejected_with_its_code(v):
    with pytest.raises(ContainerError) as info:
        decode_container(bytes.fromhex(v["container"]), now_ms=parse_ms(v["now"]), limits=DEFAULT_LIMITS)
    assert info.value.code == v["expect_error"], info.value.reason
    assert info.value.reason  # a readable reason, always


def test_cddl_schema_parses_and_accepts_every_valid_vector():
    pycddl = pytest.importorskip("pycddl", reason="pycddl is in the test extras; install with make test")
    cddl = pycddl.Schema((ROOT / "protocols" / "container.cddl").read_text(encoding="utf-8"))
    for v in VALID:
        cddl.validate_cbor(bytes.fromhex(v["container"]))  # raises on a mismatch


@pytest.mark.parametrize("description", ["not a map", "integer 1 in a two-byte form"])
def test_cddl_schema_refuses_layout_errors(description):
    # (pycddl does not apply CDDL's cut after a matched key, so some layout
    # errors that a full CDDL validator refuses pass it: only clear ones here)
    pycddl = pytest.importorskip("pycddl")
    cddl = pycddl.Schema((ROOT / "protocols" / "container.cddl").read_text(encoding="utf-8"))
    [vector] = [v for v in INVALID if v["description"] == description]
    with pytest.raises(Exception):
        cddl.validate_cbor(bytes.fromhex(vector["container"]))


# --- an independent, deliberately lax Ed25519 check (RFC 8032 5.1.7 without libsodium's
# small-order and canonical-encoding checks), to show the small-order vectors are ones that
# such verifiers accept: meshnode must refuse them all the same.

_P = 2**255 - 19
_D = -121665 * pow(121666, -1, _P) % _P
_L = 2**252 + 27742317777372353535851937790883648493


def _add(p1, p2):
    (x1, y1), (x2, y2) = p1, p2
    t = _D * x1 * x2 * y1 * y2 % _P
    return ((x1 * y2 + x2 * y1) * pow(1 + t, -1, _P) % _P, (y1 * y2 + x1 * x2) * pow(1 - t, -1, _P) % _P)


def _mul(n, point):
    out = (0, 1)
    while n:
        if n & 1:
            out = _add(out, point)
        point, n = _add(point, point), n >> 1
    return out


def _decompress(raw: bytes):
    y = int.from_bytes(raw, "little") & ((1 << 255) - 1)
    x2 = (y * y - 1) * pow(_D * y * y + 1, -1, _P) % _P
    x = pow(x2, (_P + 3) // 8, _P)
    if x * x % _P != x2:
        x = x * pow(2, (_P - 1) // 4, _P) % _P
    assert x * x % _P == x2, "not a point"
    return (_P - x if x & 1 != raw[31] >> 7 else x), y


_B = _decompress((4 * pow(5, -1, _P) % _P).to_bytes(32, "little"))


def _lax_equations_hold(public_key: bytes, signature: bytes, message: bytes) -> tuple[bool, bool]:
    """(cofactorless [S]B = R + [k]A holds, cofactored [8][S]B = [8](R + [k]A) holds)."""
    a, r, s = _decompress(public_key), _decompress(signature[:32]), int.from_bytes(signature[32:], "little")
    k = int.from_bytes(hashlib.sha512(signature[:32] + public_key + message).digest(), "little") % _L
    left, right = _mul(s, _B), _add(r, _mul(k, a))
    return left == right, _mul(8, left) == _mul(8, right)


LAX = [v for v in INVALID if v.get("lax_ed25519_accepts")]


def test_the_lax_check_itself_accepts_a_real_signature_and_refuses_a_flipped_bit():
    sk = SigningKey(bytes(32))
    sig = sk.sign(b"m").signature
    assert _lax_equations_hold(bytes(sk.verify_key), sig, b"m") == (True, True)
    assert _lax_equations_hold(bytes(sk.verify_key), sig, b"n") == (False, False)


@pytest.mark.parametrize("v", LAX, ids=[v["description"] for v in LAX])
def test_small_order_vectors_pass_a_lax_verifier_but_not_meshnode(v):
    from meshnode.base.identity.did import public_key_from_did

    assert len(LAX) == 3
    hmp = cbor2.loads(bytes.fromhex(v["container"]))["hmp_container"]
    head = hmp["head"]
    signed = cbor2.dumps(dict(hmp, head={k: x for k, x in head.items()
                                         if k not in ("signature", "container_did")}), canonical=True)
    key = public_key_from_did(head["sender_did"])
    assert _lax_equations_hold(key, head["signature"], signed) == (True, True)
    assert _mul(8, _decompress(head["signature"][:32])) == (0, 1)  # R is of small order
    with pytest.raises(ContainerError) as info:
        decode_container(bytes.fromhex(v["container"]), now_ms=parse_ms(v["now"]))
    assert info.value.code == "bad_signature"


def test_whole_number_floats_stay_floats_in_the_vector():
    [v] = [v for v in VALID if v["description"].startswith("whole-number floats")]
    data = bytes.fromhex(v["container"])
    assert "6a636f6e666964656e6365f93c00" in v["container"]  # "confidence": f9 3c 00
    decoded = cbor2.loads(data)["hmp_container"]
    assert type(decoded["payload"]["ratio"]) is float and type(decoded["payload"]["count"]) is int
    assert type(decoded["head"]["confidence"]) is float
