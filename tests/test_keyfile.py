"""meshnode.base.identity.keyfile: the only place a private key is ever written."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import nacl.pwhash
import pytest

from meshnode.base.errors import KeyFileError
from meshnode.base.identity.keyfile import (
    ENCRYPTION,
    MAX_KEY_FILE_BYTES,
    check_permissions,
    key_file_is_encrypted,
    load_key_file,
    write_key_file,
)
from meshnode.base.identity.keys import NodeKey

MIN = {"opslimit": nacl.pwhash.argon2id.OPSLIMIT_MIN, "memlimit": nacl.pwhash.argon2id.MEMLIMIT_MIN}
PASSPHRASE = "correct horse battery staple"


@pytest.fixture
def key() -> NodeKey:
    return NodeKey(bytes(range(32)))


@pytest.fixture
def plain(tmp_path, key) -> Path:
    path = tmp_path / "keys" / "node.key"
    write_key_file(path, key)
    return path


@pytest.fixture
def encrypted(tmp_path, key) -> Path:
    path = tmp_path / "keys" / "enc.key"
    write_key_file(path, key, PASSPHRASE, **MIN)
    return path


def rewrite(path: Path, data: bytes | str | dict) -> None:
    """Replace the file's content, keeping mode 0600."""
    if isinstance(data, dict):
        data = json.dumps(data)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    path.chmod(0o600)


def expect_error(path: Path, code: str, passphrase: str | None = None) -> KeyFileError:
    """load_key_file fails with exactly a KeyFileError of ``code`` (never another exception)."""
    try:
        load_key_file(path, passphrase)
    except KeyFileError as exc:
        assert exc.code == code, (exc.code, exc.reason)
        assert exc.reason
        return exc
    except BaseException as exc:  # noqa: BLE001 - the point is that nothing else escapes
        pytest.fail(f"load_key_file raised {type(exc).__name__}: {exc!r} instead of KeyFileError({code!r})")
    pytest.fail(f"load_key_file accepted a bad key file (expected {code!r})")


# --- round trips --------------------------------------------------------------


def test_plain_round_trip(plain, key):
    loaded = load_key_file(plain)
    assert loaded.seed() == key.seed()
    assert loaded.did == key.did
    assert loaded.peer_id == key.peer_id
    doc = json.loads(plain.read_text())
    assert doc["format"] == "meshnode-key/1"
    assert doc["algorithm"] == "ed25519"
    assert doc["encryption"] == "none"
    assert base64.b64decode(doc["seed"]) == key.seed()
    assert not key_file_is_encrypted(plain)


def test_encrypted_round_trip(encrypted, key):
    loaded = load_key_file(encrypted, PASSPHRASE)
    assert loaded.seed() == key.seed()
    assert loaded.did == key.did
    doc = json.loads(encrypted.read_text())
    assert doc["encryption"] == ENCRYPTION
    assert "seed" not in doc
    assert doc["kdf"]["opslimit"] == MIN["opslimit"]
    assert doc["kdf"]["memlimit"] == MIN["memlimit"]
    raw = encrypted.read_bytes()
    assert key.seed() not in raw
    assert base64.b64encode(key.seed()) not in raw
    assert key_file_is_encrypted(encrypted)


def test_generated_keys_round_trip(tmp_path):
    for i in range(3):
        k = NodeKey.generate()
        path = tmp_path / f"k{i}.key"
        write_key_file(path, k, PASSPHRASE if i % 2 else None, **MIN)
        assert load_key_file(path, PASSPHRASE).did == k.did


def test_written_file_mode_0600_and_no_temp_left(plain, encrypted):
    for path in (plain, encrypted):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(plain.parent.stat().st_mode) == 0o700
    assert sorted(p.name for p in plain.parent.iterdir()) == ["enc.key", "node.key"]


def test_mode_0600_even_with_permissive_umask(tmp_path, key):
    old = os.umask(0)
    try:
        write_key_file(tmp_path / "new" / "node.key", key, **MIN)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new" / "node.key").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o700


# --- passphrases --------------------------------------------------------------


def test_wrong_passphrase(encrypted):
    exc = expect_error(encrypted, "wrong_passphrase", "not the passphrase")
    assert "wrong passphrase" in exc.reason


@pytest.mark.parametrize("given", [None, ""])
def test_missing_passphrase(encrypted, given):
    exc = expect_error(encrypted, "passphrase_needed", given)
    assert "MESHNODE_KEY_PASSPHRASE" in exc.reason


def test_passphrase_ignored_for_plain_file(plain, key):
    assert load_key_file(plain, "anything").did == key.did


def test_unicode_passphrase(tmp_path, key):
    path = tmp_path / "u.key"
    write_key_file(path, key, "пароль-密码-🔑", **MIN)
    assert load_key_file(path, "пароль-密码-🔑").did == key.did
    expect_error(path, "wrong_passphrase", "пароль-密码-🔐")


# --- permissions and existing files -------------------------------------------


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644, 0o660, 0o606, 0o700 | 0o004, 0o610])
def test_group_or_other_access_refused(plain, mode):
    plain.chmod(mode)
    exc = expect_error(plain, "unsafe_key_file")
    assert "chmod 600" in exc.reason
    assert str(plain) in exc.reason
    with pytest.raises(KeyFileError) as info:
        check_permissions(plain)
    assert info.value.code == "unsafe_key_file"


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_owner_only_modes_accepted(plain, key, mode):
    plain.chmod(mode)
    assert load_key_file(plain).did == key.did


def test_refuses_to_overwrite(plain, key):
    before = plain.read_bytes()
    with pytest.raises(KeyFileError) as info:
        write_key_file(plain, NodeKey.generate())
    assert info.value.code == "key_exists"
    assert plain.read_bytes() == before
    assert load_key_file(plain).did == key.did


def test_missing_file(tmp_path):
    exc = expect_error(tmp_path / "nope.key", "no_key")
    assert "meshnode init" in exc.reason


def test_directory_is_not_a_key_file(tmp_path):
    d = tmp_path / "dir.key"
    d.mkdir(mode=0o700)
    expect_error(d, "unsafe_key_file")


# --- corrupt files: always KeyFileError with the right code -------------------


def doc_of(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.mark.parametrize("content", [
    b"",
    b"not json at all",
    b"\xff\xfe\x00garbage",
    b"[1, 2, 3]",
    b"\"a string\"",
    b"null",
    b"{\"format\": \"meshnode-key/1\"",
    b"[" * 2000 + b"]" * 2000,
    b"{\"a\":" * 800 + b"1" + b"}" * 800,
], ids=["empty", "text", "not-utf8", "list", "string", "null", "truncated", "deep-array", "deep-object"])
def test_not_a_key_document(plain, content):
    rewrite(plain, content)
    expect_error(plain, "corrupt_key_file")


@pytest.mark.parametrize("change", [
    {"format": "meshnode-key/2"},
    {"format": None},
    {"algorithm": "secp256k1"},
    {"encryption": "rot13"},
    {"encryption": None},
])
def test_wrong_format_fields(plain, change):
    doc = doc_of(plain)
    doc.update(change)
    rewrite(plain, {k: v for k, v in doc.items() if v is not None})
    expect_error(plain, "corrupt_key_file")


@pytest.mark.parametrize("seed", ["!!!not base64!!!", "AAAA=AAA", 12345, None, ["x"], "QUJD"])
def test_bad_seed(plain, seed):
    doc = doc_of(plain)
    doc["seed"] = seed
    rewrite(plain, doc)
    expect_error(plain, "corrupt_key_file")


def test_seed_of_wrong_length(plain):
    doc = doc_of(plain)
    doc["seed"] = base64.b64encode(bytes(31)).decode()
    rewrite(plain, doc)
    expect_error(plain, "corrupt_key_file")
    doc["seed"] = base64.b64encode(bytes(64)).decode()
    rewrite(plain, doc)
    expect_error(plain, "corrupt_key_file")


def test_did_not_matching_key(plain):
    doc = doc_of(plain)
    doc["did"] = NodeKey.generate().did
    rewrite(plain, doc)
    exc = expect_error(plain, "corrupt_key_file")
    assert "DID" in exc.reason
    del doc["did"]
    rewrite(plain, doc)
    expect_error(plain, "corrupt_key_file")


def test_did_not_matching_key_encrypted(encrypted):
    doc = doc_of(encrypted)
    doc["did"] = NodeKey.generate().did
    rewrite(encrypted, doc)
    expect_error(encrypted, "corrupt_key_file", PASSPHRASE)


def test_truncated_ciphertext(encrypted):
    doc = doc_of(encrypted)
    sealed = base64.b64decode(doc["ciphertext"])
    assert len(sealed) == 24 + 16 + 32  # nonce + MAC + seed
    for cut in (len(sealed) - 1, 40, 24, 10, 0):
        doc["ciphertext"] = base64.b64encode(sealed[:cut]).decode()
        rewrite(encrypted, doc)
        # the MAC cannot tell a truncated box from a wrong passphrase; either code is honest
        try:
            load_key_file(encrypted, PASSPHRASE)
        except KeyFileError as exc:
            assert exc.code in ("corrupt_key_file", "wrong_passphrase"), exc.code
        else:
            pytest.fail(f"a ciphertext cut to {cut} bytes was accepted")


def test_altered_ciphertext(encrypted):
    doc = doc_of(encrypted)
    sealed = bytearray(base64.b64decode(doc["ciphertext"]))
    sealed[-1] ^= 1
    doc["ciphertext"] = base64.b64encode(bytes(sealed)).decode()
    rewrite(encrypted, doc)
    expect_error(encrypted, "wrong_passphrase", PASSPHRASE)


@pytest.mark.parametrize("field, value", [
    ("ciphertext", "***"),
    ("ciphertext", None),
    ("ciphertext", 7),
])
def test_bad_ciphertext_field(encrypted, field, value):
    doc = doc_of(encrypted)
    if value is None:
        del doc[field]
    else:
        doc[field] = value
    rewrite(encrypted, doc)
    expect_error(encrypted, "corrupt_key_file", PASSPHRASE)


@pytest.mark.parametrize("kdf", [
    None,
    "argon2id",
    {},
    {"opslimit": 0},
    {"opslimit": -1},
    {"opslimit": 65},
    {"opslimit": 10**9},
    {"memlimit": 1},
    {"memlimit": 1024},
    {"memlimit": -8192},
    {"memlimit": 1 << 40},
    {"memlimit": 10**30},
    {"opslimit": "3"},
    {"memlimit": 8192.5},
    {"opslimit": None},
    {"salt": "***"},
    {"salt": 5},
])
def test_absurd_kdf_params(encrypted, kdf):
    doc = doc_of(encrypted)
    if isinstance(kdf, dict):
        if kdf:
            doc["kdf"].update(kdf)
        else:
            doc["kdf"] = {}
    elif kdf is None:
        del doc["kdf"]
    else:
        doc["kdf"] = kdf
    rewrite(encrypted, doc)
    expect_error(encrypted, "corrupt_key_file", PASSPHRASE)


def test_salt_of_wrong_length(encrypted):
    doc = doc_of(encrypted)
    doc["kdf"]["salt"] = base64.b64encode(b"short").decode()
    rewrite(encrypted, doc)
    with pytest.raises(KeyFileError) as info:
        load_key_file(encrypted, PASSPHRASE)
    assert info.value.code in ("corrupt_key_file", "wrong_passphrase")


def test_too_large_file(plain):
    doc = doc_of(plain)
    doc["padding"] = "x" * MAX_KEY_FILE_BYTES
    rewrite(plain, doc)
    exc = expect_error(plain, "corrupt_key_file")
    assert "larger" in exc.reason


def test_key_file_is_encrypted_on_corrupt_file(plain):
    rewrite(plain, b"garbage")
    with pytest.raises(KeyFileError) as info:
        key_file_is_encrypted(plain)
    assert info.value.code == "corrupt_key_file"


def test_every_truncation_of_a_key_file_is_a_key_file_error(plain, encrypted):
    for path, passphrase in ((plain, None), (encrypted, PASSPHRASE)):
        original = path.read_bytes()
        # whole-document truncations (a trailing newline cut alone is still valid JSON)
        for cut in range(0, len(original) - 2, 7):
            rewrite(path, original[:cut])
            try:
                load_key_file(path, passphrase)
            except KeyFileError:
                pass
            except BaseException as exc:  # noqa: BLE001
                pytest.fail(f"cut at {cut}: {type(exc).__name__}: {exc!r}")
            else:
                pytest.fail(f"cut at {cut} accepted")
