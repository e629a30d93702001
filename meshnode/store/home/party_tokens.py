"""The bearer tokens of the agent's known A2A parties (protocols/a2a.md section 4), in the home:
a line ``name token`` each in ``[a2a] known_tokens_path`` (mode 0600, refused when others may read it).
A withdrawn token leaves a comment ``#revoked name <sha256 of the token>`` (the last MAX_REVOKED), so
the face tells its holder it was withdrawn (HTTP 401) instead of taking it for an unknown party.

The home's data, apart from the A2A face: ``meshnode a2a token add|list|remove`` edits the file with the
node stopped or running, and the face (a2a/admission.py ``KnownParties``) re-reads it when it changes.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

MAX_TOKENS_FILE = 64 * 1024
MIN_TOKEN_CHARS = 24
MAX_REVOKED = 256
REVOKED = "#revoked"


def read_tokens(path: Path) -> dict[str, str]:
    """``{token digest: name}`` of the known parties' file (missing: none; readable by others: refused,
    as the web token is)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return {}
    if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o077:
        raise PermissionError(f"{path} must be a regular file of mode 0600")
    out = {}
    for line in path.read_bytes()[:MAX_TOKENS_FILE].decode("utf-8", "replace").splitlines():
        parts = line.split()
        if len(parts) == 2 and not line.lstrip().startswith("#") and len(parts[1]) >= MIN_TOKEN_CHARS:
            out[digest(parts[1])] = parts[0][:64]
    return out


def revoked_digests(path: Path) -> dict[str, str]:
    """``{token digest: name}`` of the tokens withdrawn (``remove_token``), as the file keeps them."""
    try:
        text = path.read_bytes()[:MAX_TOKENS_FILE].decode("utf-8", "replace")
    except FileNotFoundError:
        return {}
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == REVOKED and len(parts[2]) == 64:
            out[parts[2]] = parts[1][:64]
    return out


def token_names(path: Path) -> list[str]:
    """The names in the tokens file, in its order (the tokens themselves are not shown again)."""
    return list(read_tokens(path).values())


def add_token(path: Path, name: str) -> str:
    """A new token for the known party ``name`` (letters, digits, ``._-``), appended to the file
    (created 0600); returned once, to be handed to that party."""
    import secrets

    if not (0 < len(name) <= 64 and all(ch.isalnum() or ch in "._-" for ch in name)):
        raise ValueError("a party's name is 1 to 64 letters, digits, '.', '_' or '-'")
    if name in token_names(path):
        raise ValueError(f"{name} has a token already; remove it first for a new one")
    token = secrets.token_urlsafe(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a") as f:
        f.write(f"{name} {token}\n")
    return token


def remove_token(path: Path, name: str) -> bool:
    """Drop ``name``'s token (a request with it is refused from then on: HTTP 401, "withdrawn"); False
    if it had none."""
    if name not in token_names(path):
        return False
    lines = path.read_text("utf-8", "replace").splitlines()
    gone = [line.split() for line in lines if line.split()[:1] == [name]]
    keep = [line for line in lines if line.split()[:1] != [name]]
    keep += [f"{REVOKED} {name} {digest(parts[1])}" for parts in gone if len(parts) == 2]
    revoked = [i for i, line in enumerate(keep) if line.startswith(REVOKED + " ")]
    drop = set(revoked[:-MAX_REVOKED]) if len(revoked) > MAX_REVOKED else set()
    keep = [line for i, line in enumerate(keep) if i not in drop]
    tmp = path.with_name(path.name + ".new")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("".join(line + "\n" for line in keep))
    os.replace(tmp, path)
    return True


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()
